"""The construction thesaurus: words and phrases that mean one thing on a project, grouped
under a concept (strongroom.vault.analysis turns each group into one concept term).

How to write a phrase:
- plain words are matched after analysis (stemmed, stop words left out), so `subcontractor`
  also finds `subcontractors` and `sub-contractor's`;
- a phrase in CAPITALS is an acronym, matched with its case and an optional plural `s`
  (`CO`, `COs`), never the lower-case word (`co`);
- a phrase starting with `?` is site slang that counts in questions only: passages are not
  tagged with it (a passage's `sub-clause` is no subcontractor).

Only groups whose members a contract or specification uses interchangeably belong here: a
wrong group makes search find what was not asked for. Editing this file changes how
passages are indexed: run `strongroom reindex` afterwards.
"""

CONCEPTS: dict[str, tuple[str, ...]] = {
    "subcontractor": ("subcontractor", "sub contractor", "trade contractor", "?sub", "?subbie"),
    "general contractor": (
        "general contractor", "main contractor", "prime contractor", "head contractor", "GC",
    ),
    "liquidated damages": ("liquidated damages", "delay damages", "LD", "LDs", "?late penalty"),
    "change order": (
        "change order", "variation", "variation order", "contract modification", "CO", "VO",
    ),
    "schedule": ("schedule", "programme", "program of works", "construction program"),
    "request for information": ("request for information", "RFI"),
    "notice to proceed": ("notice to proceed", "NTP"),
    "substantial completion": ("substantial completion", "practical completion"),
    "retention": ("retention", "retainage", "retained percentage", "retention money"),
    "extension of time": ("extension of time", "time extension", "EOT"),
    "differing site conditions": (
        "differing site conditions", "unforeseen ground conditions", "latent conditions",
        "concealed conditions", "unknown physical conditions", "subsurface conditions",
        "?unforeseen conditions", "?unexpected ground", "?nobody told us", "?unexpected rock",
    ),
    "terminate": (
        "terminate", "termination", "?thrown off", "?kicked off", "?fire the contractor"),
    "suspend": ("suspend", "suspension", "stop work", "work stoppage", "?stop working", "?halt"),
    "payment": ("payment", "pay", "paid", "?get paid"),
    "warranty": ("warranty", "guarantee", "guaranty"),
    "defect": ("defect", "defective", "nonconforming", "non conforming", "deficiency"),
    "site": ("site", "jobsite", "job site", "worksite", "work site", "project site"),
    "personal protective equipment": ("personal protective equipment", "PPE"),
    "head protection": ("head protection", "protective helmet", "hard hat", "hardhat"),
    "fall protection": ("fall protection", "fall arrest", "guardrail system"),
    "excavation": ("excavation", "trench", "trenching", "?dig", "?digging", "?hole in the ground"),
    "owner": ("owner", "employer", "principal", "client"),
    "delay": ("delay", "?late", "?behind schedule", "?running late"),
    "completion date": ("completion date", "time for completion", "?deadline", "?finish date"),
    "bond": ("bond", "surety", "performance security"),
}  # fmt: skip
