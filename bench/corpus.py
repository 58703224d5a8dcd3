"""Construction-contract prose, PDFs and search queries for the benchmarks, from a seeded
`random.Random` (two runs index and search the same text). Party and contract words are in
almost every passage; each passage is about one topic with a second mixed in (a topic's terms
are each in 200-1,000 of 10,000 passages); specialist words in a few dozen each. ASCII, which
fpdf2's core Helvetica font needs.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Sequence

PARTIES = [
    "Contractor", "Employer", "Engineer", "Subcontractor", "Architect", "Quantity Surveyor",
    "Project Manager", "Supplier", "Principal Designer",
]  # fmt: skip
CONTRACT_DOCUMENTS = [
    "Specification", "Drawings", "Programme", "Bill of Quantities", "Employer's Requirements",
    "Contract Data", "Method Statement", "Works Information", "Scope",
]  # fmt: skip
CERTIFICATES = [
    "Certificate of Practical Completion", "Taking-Over Certificate", "Interim Certificate",
    "Final Certificate", "Defects Certificate", "Certificate of Making Good",
]  # fmt: skip
STANDARDS = [
    "BS EN 206", "BS 8500", "BS EN 1090", "BS EN 1992", "BS 5950", "BS 7671", "BS 8110",
    "BS EN 13670", "BS 6399", "BS EN 12845", "ISO 9001", "ISO 14001", "ISO 45001",
]  # fmt: skip
VERBS = [
    "provide", "maintain", "inspect", "complete", "submit", "approve", "protect", "test",
    "remove", "replace", "repair", "design", "install", "supply", "coordinate", "certify",
    "record", "monitor", "rectify", "notify the Engineer of",
]  # fmt: skip
STATES = [
    "completed", "approved", "accepted", "certified", "rectified", "submitted", "agreed",
    "delivered", "commissioned", "inspected",
]  # fmt: skip
EVENTS = [
    "the Starting Date", "the Completion Date", "receipt of the instruction", "the due date",
    "the end of the month", "the date of the notice", "the Valuation Date",
    "the occurrence of the event", "access to the Site", "the Contract Date",
]  # fmt: skip

# fmt: off
# Topic -> its terms. Passages and queries pick topics with weight 1/sqrt(rank), so the
# first is about 4.5 times as common as the last.
TOPICS: dict[str, list[str]] = {
    "payment": [
        "payment", "invoice", "valuation", "interim payment", "retention", "final account",
        "pay less notice", "withholding", "cash flow", "advance payment", "payment bond",
        "daywork", "due date", "final date for payment", "interest on late payment",
    ],
    "time": [
        "programme", "delay", "extension of time", "completion date", "milestone",
        "critical path", "float", "acceleration", "liquidated damages", "sectional completion",
        "possession of the site", "time at large", "concurrent delay", "mitigation",
    ],
    "variations": [
        "variation", "instruction", "change order", "valuation of variations", "omission",
        "provisional sum", "contingency", "quotation", "star rates", "compensation event",
        "early warning", "daywork sheets", "schedule of rates",
    ],
    "concrete": [
        "concrete", "formwork", "reinforcement", "rebar", "slump", "curing", "pour",
        "cube test", "concrete cover", "admixture", "precast units", "post-tensioning",
        "screed", "shrinkage cracking", "honeycombing", "construction joints",
    ],
    "defects": [
        "defect", "snagging", "rectification", "latent defects", "defects liability period",
        "making good", "warranty", "inspection", "practical completion", "taking over",
        "defects list", "remedial works", "partial possession",
    ],
    "health_safety": [
        "health and safety", "risk assessment", "permit to work", "scaffolding", "PPE",
        "near miss", "CDM Regulations", "hot works", "confined space", "fall arrest",
        "toolbox talk", "safety induction", "accident reporting", "edge protection",
    ],
    "earthworks": [
        "excavation", "backfill", "compaction", "dewatering", "groundwater", "spoil",
        "trench support", "topsoil", "embankment", "geotextile", "sheet piling", "shoring",
        "bearing capacity", "ground investigation", "unforeseen ground conditions",
    ],
    "steelwork": [
        "structural steelwork", "beams", "columns", "bolted connections", "welding",
        "galvanising", "fabrication", "steel erection", "bracing", "fire protection",
        "intumescent coating", "primer", "mill certificates", "erection tolerances",
    ],
    "mep": [
        "ductwork", "chiller", "boiler", "switchgear", "cabling", "sprinkler system",
        "ventilation", "commissioning", "building management system", "plumbing",
        "drainage", "luminaires", "cable containment", "witness testing",
    ],
    "insurance": [
        "insurance", "indemnity", "professional indemnity", "contractors all risks",
        "third party liability", "subrogation", "insurance excess", "insurer",
        "claim notification", "joint names policy", "employers liability",
    ],
    "disputes": [
        "dispute", "adjudication", "arbitration", "mediation", "notice of dissatisfaction",
        "referral", "adjudicator", "expert determination", "litigation", "without prejudice",
        "decision of the adjudicator",
    ],
    "design": [
        "design responsibility", "shop drawings", "design approval", "submittal",
        "request for information", "design development", "design coordination", "BIM model",
        "clash detection", "contractor's design portion", "reasonable skill and care",
    ],
    "facade": [
        "curtain wall", "cladding", "glazing", "mullions", "transoms", "sealant",
        "rainscreen", "brackets", "louvres", "spandrel panels", "weathertightness",
        "water penetration test",
    ],
    "quality": [
        "quality plan", "inspection and test plan", "hold point", "witness point",
        "non-conformance report", "quality audit", "tolerances", "samples", "mock-up",
        "benchmark", "workmanship",
    ],
    "termination": [
        "termination", "insolvency", "suspension", "force majeure", "repudiation",
        "default notice", "step-in rights", "termination for convenience",
        "loss of profit", "continuation of the works",
    ],
    "site": [
        "site access", "hoarding", "welfare facilities", "site office", "tower crane",
        "logistics plan", "site security", "hoist", "laydown area", "working hours",
        "traffic management", "site setup",
    ],
    "materials": [
        "materials on site", "off-site materials", "vesting certificate", "title to materials",
        "storage", "delivery", "procurement", "long lead items", "substitution",
        "approved manufacturer",
    ],
    "environment": [
        "waste management", "noise", "dust suppression", "vibration monitoring", "ecology",
        "contaminated land", "asbestos", "archaeology", "protected species",
        "environmental permit",
    ],
    "subcontracting": [
        "subcontract", "nominated subcontractor", "domestic subcontractor",
        "collateral warranty", "back-to-back terms", "novation", "assignment",
        "subcontractor design", "main contractor's discount",
    ],
    "roofing": [
        "roof membrane", "roof insulation", "flashing", "gutters", "downpipes", "parapet",
        "single-ply", "standing seam", "rooflights", "roof falls",
    ],
}
# Specialist words: each in a few dozen of 10,000 passages.
RARE = [
    "bentonite", "gabion", "laitance", "efflorescence", "shotcrete", "underpinning", "caisson",
    "cofferdam", "soffit", "plenum", "tanking", "grillage", "ettringite", "dowels",
    "waterstop", "spalling", "anemometer", "theodolite", "piezometer", "inclinometer",
    "holding-down bolts", "gunite", "muckaway", "benching", "architrave", "skirting",
    "plasterboard", "lintel", "cavity tray", "weep holes", "damp proof course", "blinding",
    "hardcore", "sulphate attack", "carbonation", "creep", "camber", "deflection",
    "attenuator", "fire damper", "smoke vent", "dry riser", "wet riser",
    "lightning protection", "earthing", "busbar", "transformer", "standby generator",
    "fibre optic", "access control", "intruder alarm", "stair nosing", "balustrade",
    "handrail", "expansion joint", "movement joint", "secant piles", "contiguous piles",
    "pile cap", "ground beam", "raft foundation", "pad foundation", "ground anchors",
    "rock bolts", "soil nailing", "sprayed concrete", "permeation grouting", "jet grouting",
    "vibro compaction", "dynamic compaction", "lime stabilisation", "capping layer",
    "sub-base", "kerbs", "tactile paving", "bollards", "manholes", "gullies", "interceptor",
    "soakaway", "attenuation tank", "pumping station", "rising main", "culvert", "headwall",
    "rip-rap", "revetment", "sheet pile cofferdam", "tremie", "slipform", "jump form",
    "table forms", "falsework", "backpropping", "formwork striking", "hydrodemolition",
    "asbestos survey", "japanese knotweed", "great crested newts", "bat survey",
    "tree preservation order", "party wall award", "rights of light", "oversailing licence",
    "crane oversail", "section 278 agreement", "section 106", "building control",
    "fire strategy", "compartmentation", "fire stopping", "cavity barriers", "dampers",
    "smoke shafts", "evacuation lift", "firefighting shaft", "sprinkler tank", "booster pumps",
    "legionella", "chlorination", "pressure testing", "thermographic survey",
    "air tightness test", "acoustic testing", "u-value", "thermal bridging",
    "condensation risk", "vapour control layer", "breather membrane", "zinc cladding",
    "terracotta", "brick slips", "render", "ETICS", "GRC panels", "structural glazing",
    "toughened glass", "laminated glass", "heat soak test", "nickel sulphide", "gasket",
    "silicone", "anodising", "powder coating", "PTFE",
]  # fmt: skip
QUESTIONS = [
    "who pays for {t}", "when is the {t} due", "{p} responsible for {t}", "notice period for {t}",
    "what happens if {t} is late", "{t} requirements",
]  # fmt: skip
MISSING = ["zeppelin", "quasar", "marmalade", "harpsichord", "origami", "tundra"]

SENTENCES = [
    "The {party} shall {verb} the {t1} in accordance with the {doc} and Clause {clause}.",
    "Where the {t1} is not {state} within {days} days of {event}, the {party} may give "
    "notice to the {party2} stating the grounds.",
    "Any {t1} required by the {party2} shall be valued under Clause {clause}, unless the "
    "{doc} states otherwise.",
    "The {party} is responsible for the {t1} and the {t2} until the issue of the {cert}.",
    "No {t1} shall be carried out until the {party2} has accepted the {t2} and the "
    "associated {doc}.",
    "The cost of the {t1}, including the {t2} and the {t3}, is included in the Contract Sum.",
    "The {party} shall keep records of the {t1}, the {t2} and the {t3} and make them "
    "available for inspection on {days} days' notice.",
    "If the {party} fails to {verb} the {t1}, the {party2} may engage others to do so and "
    "recover the cost from the {party}.",
    "Within {days} days after {event}, the {party} shall submit a revised {doc} showing the "
    "effect of the {t1} on the {t2}.",
    "The {t1} shall comply with {standard} and with the {doc}; tolerances shall not exceed "
    "{mm} mm.",
    "A {t1} that does not meet the requirements for the {t2} shall be removed and replaced "
    "at the {party}'s cost.",
    "The {party2} shall pay the sum of {amount} pounds for the {t1} within {days} days of "
    "the due date.",
    "The {party} shall notify the {party2} promptly of any matter relating to the {t1} "
    "which may affect the {t2}.",
    "Unless otherwise agreed, the {t1} is to be {state} before the {t2} begins.",
]
CLAUSE_TITLES = [
    "General obligations", "Programme and progress", "Payment", "Variations", "Quality",
    "Testing and inspection", "Defects", "Insurance", "Disputes", "Termination",
    "Design", "Materials and workmanship", "Health, safety and environment",
    "Subcontracting", "Site matters", "Completion",
]  # fmt: skip


class ContractWriter:
    """Clauses, pages and passages of seeded contract prose."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)  # noqa: S311 (text, not secrets)
        names = list(TOPICS)
        self.topic_names = names
        self.topic_weights = [1 / (rank + 1) ** 0.5 for rank in range(len(names))]

    def topic(self) -> str:
        return self.rng.choices(self.topic_names, self.topic_weights)[0]

    def term(self, topic: str, second: str) -> str:
        roll = self.rng.random()
        if roll < 0.04:
            return self.rng.choice(RARE)
        return self.rng.choice(TOPICS[topic if roll < 0.78 else second])

    def sentence(self, topic: str, second: str) -> str:
        rng = self.rng
        template = rng.choice(SENTENCES)
        parties = rng.sample(PARTIES, 2)
        return template.format(
            party=parties[0], party2=parties[1], verb=rng.choice(VERBS),
            state=rng.choice(STATES), event=rng.choice(EVENTS),
            doc=rng.choice(CONTRACT_DOCUMENTS), cert=rng.choice(CERTIFICATES),
            standard=rng.choice(STANDARDS), clause=f"{rng.randint(1, 30)}.{rng.randint(1, 12)}",
            days=rng.choice([5, 7, 10, 14, 21, 28, 42, 56, 90]),
            mm=rng.choice([3, 5, 10, 15, 20, 25]), amount=f"{rng.randint(1, 950) * 1000:,}",
            t1=self.term(topic, second), t2=self.term(topic, second), t3=self.term(topic, second),
        )  # fmt: skip

    def passage(self, target: int = 1100) -> str:
        """One search passage of about `target` characters on one topic."""
        topic, second = self.topic(), self.topic()
        sentences: list[str] = []
        size = 0
        while size < target:
            sentence = self.sentence(topic, second)
            sentences.append(sentence)
            size += len(sentence) + 1
        return " ".join(sentences)

    def page(self, number: int, target: int = 2500) -> str:
        """A page of numbered clauses, about `target` characters, paragraphs apart by blank
        lines (as a contract reads)."""
        paragraphs: list[str] = []
        size = 0
        clause = 1
        while size < target:
            topic, second = self.topic(), self.topic()
            heading = f"{number}.{clause} {self.rng.choice(CLAUSE_TITLES)}"
            count = self.rng.randint(2, 4)
            body = " ".join(self.sentence(topic, second) for _ in range(count))
            paragraphs.append(f"{heading}\n{body}")
            size += len(heading) + len(body) + 3
            clause += 1
        return "\n\n".join(paragraphs)

    def pages(self, count: int, chars: int = 2500) -> list[str]:
        return [self.page(number, chars) for number in range(1, count + 1)]

    def queries(self, count: int) -> list[str]:
        """`count` search queries of 1 to 6 words: topic words, rare words, topic phrases,
        questions with stop words, and a few that match nothing."""
        rng = self.rng
        out: list[str] = []
        while len(out) < count:
            kind = rng.random()
            topic = self.topic()
            if kind < 0.15:  # one topic term
                query = rng.choice(TOPICS[topic])
            elif kind < 0.30:  # one rare specialist term
                query = rng.choice(RARE)
            elif kind < 0.65:  # a phrase of a topic's terms
                words = " ".join(rng.sample(TOPICS[topic], 2)).split()
                query = " ".join(words[: rng.randint(2, 4)])
            elif kind < 0.85:  # a question, stop words and common words and all
                term = rng.choice(TOPICS[topic] + RARE[:40])
                query = rng.choice(QUESTIONS).format(t=term, p=rng.choice(PARTIES).lower())
            elif kind < 0.97:  # a rare term with a topic term
                query = f"{rng.choice(RARE)} {rng.choice(TOPICS[topic])}"
            else:  # nothing matches
                query = rng.choice(MISSING)
            words = query.split()
            if 1 <= len(words) <= 6:
                out.append(query)
        return out


def make_pdf(pages: Sequence[str]) -> bytes:
    """A text PDF with one A4 page per string (fpdf2, core Helvetica 10 pt). Lines are
    wrapped here and placed with `text()`: fpdf2's `multi_cell` takes about 50 ms a page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(auto=False)
    pdf.set_font("Helvetica", size=10)
    for text in pages:
        pdf.add_page()
        y = 15.0
        for paragraph in text.split("\n"):
            for line in textwrap.wrap(paragraph, 100) or [""]:
                if y > 285:
                    raise ValueError("the page's text does not fit on one A4 page")
                pdf.text(12, y, line)
                y += 4.4
    return bytes(pdf.output())
