"""The construction thesaurus: words and phrases that mean one thing on a project, grouped
under a concept (strongroom.text.analysis turns each group into one concept term).

How to write a phrase:
- plain words are matched after analysis (stemmed), so `subcontractor` also finds
  `subcontractors` and `sub-contractor's`; a phrase's small (stop) words are matched as
  written, so `hand over` is not any `hand` and `or equal` not any `equal`;
- a phrase in CAPITALS is an acronym, matched with its case and an optional plural `s`
  (`CO`, `COs`), never the lower-case word (`co`);
- a phrase starting with `?` is site slang that counts in questions only: passages are not
  tagged with it (a passage's `sub-clause` is no subcontractor). It is matched as said,
  word for word with its small words and an optional plural `s`/`es`, never by its stem:
  `?fired` is not `fire` (an extinguisher), `?stand down` not any `stand`.

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
    "substantial completion": ("substantial completion", "practical completion",
                               "?nearly done", "?nearly finished", "?almost done",
                               "?almost finished"),
    "retention": ("retention", "retainage", "retained percentage", "retention money"),
    "extension of time": ("extension of time", "time extension", "EOT"),
    "differing site conditions": (
        "differing site conditions", "unforeseen ground conditions", "latent conditions",
        "concealed conditions", "unknown physical conditions", "subsurface conditions",
        "?unforeseen conditions", "?unexpected ground", "?nobody told us", "?unexpected rock",
    ),
    "terminate": (
        "terminate", "termination", "?thrown off", "?kicked off", "?fire the contractor"),
    "suspend": ("suspend", "suspension", "stop work", "work stoppage", "?stop working", "?halt",
                "?stand down", "?stood down", "?shut down"),
    "payment": ("payment", "pay", "paid", "?get paid"),
    "warranty": ("warranty", "guarantee", "guaranty"),
    "defect": ("defect", "defective", "nonconforming", "non conforming", "deficiency"),
    "site": ("site", "jobsite", "job site", "worksite", "work site", "project site"),
    "personal protective equipment": ("personal protective equipment", "PPE"),
    "head protection": ("head protection", "protective helmet", "hard hat", "hardhat"),
    "fall protection": ("fall protection", "fall arrest", "guardrail system"),
    "excavation": ("excavation", "trench", "trenching", "?dig", "?digging", "?hole in the ground"),
    "owner": ("owner", "employer", "principal", "client"),
    "delay": ("delay", "?late", "?behind schedule", "?running late", "?slow down",
              "?slows down", "?slowed down", "?slows us down", "?slow us down", "?held up"),
    "completion date": ("completion date", "time for completion", "?deadline", "?finish date"),
    "bond": ("bond", "surety", "performance security"),
    # Plain words a site team uses for what a contract says in its own (issue 15: questions
    # worded otherwise than the passage).
    "the work": ("work", "?job", "?the project"),
    "complete": ("complete", "completion", "finish", "finished"),
    "additional": ("additional", "extra", "increased", "excess"),
    "withhold": ("withhold", "withheld", "retain", "retained", "hold back", "holdback",
                 "keep back", "?held", "?kept back"),
    "payment request": (
        "payment request", "request for payment", "pay application", "pay request",
        "payment application", "progress claim", "invoice",
    ),
    "remedy": ("remedy", "repair", "correct", "rectify", "make good", "?fix"),
    "faulty": ("faulty", "?bad workmanship", "?shoddy", "?sloppy"),
    "acceptance": ("acceptance", "accepted", "handover", "hand over", "handed over",
                   "taking over", "?sign off", "?signs off", "?signed off"),
    "workers": ("workers", "workforce", "employees", "personnel", "labor force", "crew",
                "?guys", "?a guy", "?lads"),
    "rubbish": ("rubbish", "debris", "waste", "trash", "?junk", "?offcuts", "?scraps"),
    "remove": ("remove", "removal", "haul away", "take away", "get rid", "?clear out",
               "?clear away"),
    "substitute": ("substitute", "substitution", "or equal", "swap"),
    "manufacturer": ("manufacturer", "brand", "trade name", "make and model"),
    "specifications": ("specifications", "specification", "?specs", "?spec"),
    "drawings": ("drawings", "plans", "?blueprints"),
    "own forces": ("own organization", "own forces", "?self perform", "?self performed"),
    "profit": ("profit", "margin", "markup", "mark up"),
    "liable": ("liable", "liability", "responsible", "responsibility", "?on the hook"),
    "oral": ("oral", "orally", "verbal", "verbally", "?on the phone"),
    "bid": ("bid", "bidding", "tender", "offer", "proposal"),
    "site investigation": ("site investigation", "site visit", "inspect the site",
                           "?walked the site", "?walk the site"),
    "public": ("the public", "third party", "third parties", "?passer by", "?bystander"),
    "fired": ("?fired", "?fire us", "?sacked"),
    "stop": ("stop", "stopping", "?shut down", "?stand down", "?halts", "?halt"),
    # Site words for what safety manuals and specifications say in their own (issue 40).
    "curing": ("curing", "cure", "cured", "?keep the slab wet", "?keep the concrete wet",
               "?keep it wet", "?keep it damp", "?wet it down"),
    "placing": ("placing", "placement", "place concrete", "?pour", "?pouring", "?poured"),
    "form removal": ("form removal", "removal of forms", "remove forms", "stripping",
                     "?strip the forms", "?strip forms", "?pull the forms"),
    "cold weather": ("cold weather", "freezing weather", "?freezing out", "?below freezing",
                     "?frost"),
    "injury": ("injury", "injuries", "injured", "amputation", "?hurt", "?lost a finger",
               "?loses a finger", "?cut off"),
    "training": ("training", "trained", "retrained", "?refresher",
                 "?course", "?redo their"),
    "shoring": ("shoring", "protective system", "?shore up", "?shore it"),
    "scaffold": ("scaffold", "scaffolding", "staging"),
    "fall": ("fall", "falls", "falling", "?fall off", "?falling off", "?drop off"),
    "vehicle": ("vehicle", "truck", "?ute", "?lorry"),
    # Issue 53: words a contract, a specification or a safety manual uses interchangeably
    # with how a site team asks (paraphrases).
    "longitudinal": ("longitudinal", "lengthwise"),
    "transverse": ("transverse", "crosswise"),
    "fine aggregate": ("fine aggregate", "sand"),
    "coarse aggregate": ("coarse aggregate", "course aggregate", "gravel", "stone"),
    "conflict": ("conflict", "discrepancy", "inconsistency", "inconsistent", "?disagree",
                 "?clash", "?contradict", "?don't match", "?do not match"),
    "precedence": ("precedence", "override", "?win", "?trump", "?goes first"),
    "reject": ("reject", "rejection", "?throw out", "?thrown out", "?turn down",
               "?turned down"),
    "inspect": ("inspect", "inspection", "examine", "examination", "check", "?look over"),
    "dispute": ("dispute", "disagreement", "?fight", "?fight over", "?argue", "?argued",
                "?argument"),
    "settle": ("settle", "resolve", "?sort out"),
    "foreign": ("foreign", "?imported", "?overseas", "?abroad", "?offshore"),
    "domestic": ("domestic", "?american made", "?made in america", "?made here",
                 "?made in the usa"),
    "reimburse": ("reimburse", "reimbursement", "?pay back", "?paid back", "?pay us back",
                  "?pay me back"),
    "accumulate": ("accumulate", "accumulation", "?pile up", "?piling up", "?build up",
                   "?building up"),
    "extend": ("extend", "?stick up", "?stick out", "?poke up"),
    "punch list": ("punch list", "snag list", "snagging list"),
    "not submitted": ("fail to submit", "failure to submit", "failed to submit", "?leave out",
                      "?left out", "?never hand in", "?never handed in", "?never submit",
                      "?never submitted"),
    "negligence": ("negligence", "negligent", "negligently", "careless", "carelessly",
                   "carelessness"),
    "expense": ("expense", "?foot the bill", "?pick up the tab"),
    "possession": ("possession", "occupancy", "occupy", "?move into", "?moved into",
                   "?move in", "?moved in"),
    "off site": ("off site", "offsite", "other than the site", "?away from the site"),
    "reduce": ("reduce", "reduction", "decrease", "?cut our price", "?cut the price"),
    "interpretation": ("interpretation", "interpret", "?misread", "?misreading",
                       "?how we read"),
    "property": ("property", "?belongings", "?stuff"),
    "request": ("request", "?ask for", "?asked for"),
    "adjacent": ("adjacent", "adjoining", "next to", "beside"),
    "tie off": ("tie off", "tied off", "tying off", "belt off", "belting off", "?clip on",
                "?clip off", "?clipped on", "?hook on"),
    "unsafe": ("unsafe", "?not up to code", "?isn't up to code", "?not safe"),
    "concur": ("concur", "concurrence"),
    "law": ("law", "statute"),
}  # fmt: skip
