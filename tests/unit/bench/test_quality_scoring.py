"""bench-quality's scoring rules (issue 15, point 5; bench/quality/scoring.py), on small fixed
examples: what "holds the right fact", "the first quoted sentence", "abstained", "the gold
passage" and "a template field right and concise" mean, and the table they add up to."""

from __future__ import annotations

from bench.quality import scoring

WARRANTY = (
    "This warranty shall continue for a period of 1 year from the date of final acceptance "
    "of the work."
)
QUESTION = {
    "id": "L01",
    "kind": "lookup",
    "question": "How long does the warranty continue?",
    "answer": ["1 year from the date of final acceptance"],
    "passage": "continue for a period of 1 year",
}


def test_holds_the_right_fact_case_insensitively_across_markers_and_line_breaks() -> None:
    answer = "This Warranty shall continue for 1\nyear [1] from the date of FINAL acceptance."
    assert scoring.holds(answer, ["1 year from the date of final acceptance"])


def test_holds_needs_every_fact() -> None:
    facts = ["completion and acceptance of all work", "properly executed voucher"]
    assert scoring.holds("(1) Completion and acceptance of all work; [1]", facts[:1])
    assert not scoring.holds("(1) Completion and acceptance of all work; [1]", facts)


def test_holds_no_fact_is_never_right() -> None:
    assert not scoring.holds("anything", [])


def test_holds_reads_facts_as_regular_expressions_and_quotes_straight() -> None:
    assert scoring.holds("payment bonds for any contract exceeding $150,000.", [r"\$150,000"])
    assert scoring.holds("at the Contractor\u2019s expense", ["Contractor's expense"])
    assert scoring.holds("the *provided* time", ["the provided time"])


def test_first_quoted_sentence_is_the_text_before_the_first_marker() -> None:
    answer = "The Contractor shall pay [2] liquidated damages. Retainage is 10 percent. [1]"
    assert scoring.first_quoted_sentence(answer) == "The Contractor shall pay"
    answer = f"{WARRANTY} [3] The Contractor shall remedy any defect. [1]"
    assert scoring.first_quoted_sentence(answer) == WARRANTY


def test_first_quoted_sentence_without_markers_is_the_first_sentence() -> None:
    assert scoring.first_quoted_sentence("One fact. Another fact.") == "One fact."


def test_abstained_needs_the_plain_words_and_no_citation() -> None:
    not_found = "Not found in the documents: no passage answers this question."
    assert scoring.abstained(not_found, [])
    assert not scoring.abstained(not_found, ["a cited passage"])
    assert not scoring.abstained("The documents do not say. [1]", [])
    assert not scoring.abstained(f"{WARRANTY} [1]", [])


def test_gold_passage_is_found_by_its_quote_in_any_of_its_forms() -> None:
    content = "(b) This warranty shall continue for a period of\n1 year from the date ..."
    assert scoring.is_gold(content, "continue for a period of 1 year")
    assert scoring.is_gold("52.236-15 Progress schedule", ["As prescribed in 36.515", "Progress"])
    assert not scoring.is_gold(content, "2 years")
    assert not scoring.is_gold(content, None)


def test_gold_rank_is_one_based_and_none_when_missing() -> None:
    ranking = ["other passage", WARRANTY, WARRANTY]
    assert scoring.gold_rank(ranking, QUESTION["passage"]) == 2
    assert scoring.gold_rank(ranking[:1], QUESTION["passage"]) is None


def test_judge_a_right_answer() -> None:
    judged = scoring.judge(
        QUESTION, f"{WARRANTY} [1]", [WARRANTY], search=[WARRANTY], peer=["x", WARRANTY]
    )
    assert (judged.fact, judged.first_fact, judged.cited_gold) == (True, True, True)
    assert (judged.search_rank, judged.peer_rank, judged.abstained) == (1, 2, False)


def test_judge_the_fact_in_a_later_sentence_is_not_a_right_first_sentence() -> None:
    answer = f"The Contractor shall remedy any defect. [2] {WARRANTY} [1]"
    judged = scoring.judge(QUESTION, answer, ["The Contractor shall remedy", WARRANTY])
    assert judged.fact and judged.cited_gold
    assert not judged.first_fact


def test_judge_citing_another_passage_is_not_citing_the_gold_one() -> None:
    judged = scoring.judge(QUESTION, f"{WARRANTY} [1]", ["a passage that only quotes it"])
    assert judged.fact and not judged.cited_gold


def test_template_field_right_is_concise_and_holds_the_value() -> None:
    assert scoring.field_right("1 year", True, [r"1 year"])
    assert not scoring.field_right(WARRANTY * 2, True, [r"1 year"])  # a paragraph
    assert not scoring.field_right("2 years", True, [r"1 year"])
    assert not scoring.field_right(None, False, [r"1 year"])


def test_template_field_without_gold_is_right_only_left_as_a_placeholder() -> None:
    assert scoring.field_right(None, False, None, placeholder_kept=True)
    assert not scoring.field_right(None, False, None, placeholder_kept=False)
    assert not scoring.field_right("Harbour Holdings Ltd", True, None)


def test_the_table_counts_each_row_over_its_own_questions() -> None:
    right = scoring.judge(QUESTION, f"{WARRANTY} [1]", [WARRANTY], [WARRANTY], [])
    paraphrase = {**QUESTION, "id": "P01", "kind": "paraphrase"}
    missed = scoring.judge(paraphrase, "Not found in the documents.", [], ["x"] * 5 + [WARRANTY])
    unanswerable = {"id": "U01", "kind": "unanswerable", "question": "What is the sum?"}
    abstained = scoring.judge(unanswerable, "Not found in the documents.", [])
    rows = {row.measured: row for row in scoring.chat_and_search_rows([right, missed, abstained])}

    assert rows["chat answer holds the right fact, all answerable questions"].value == "50% (1/2)"
    paraphrase_row = "... when the question uses other words than the passage (paraphrase)"
    assert rows[paraphrase_row].value == "0% (0/1)"
    abstain_row = next(r for r in rows.values() if r.measured.startswith('chat answers "not found'))
    assert abstain_row.value == "100% (1/1)"
    top = rows["search: the right passage in the top 5"]
    assert (top.value, top.peer) == ("0.50 (1/2)", "0.00 (0/2)")  # rank 6 is not in the top 5
    table = scoring.markdown(list(rows.values()))
    assert table.splitlines()[0] == "| measured | value | bm25s, same passages | goal |"


def test_template_row_counts_answerable_and_unanswerable_fields_apart() -> None:
    row = scoring.template_row(
        [
            {"value": "1 year", "found": True, "gold": [r"1 year"]},
            {"value": WARRANTY, "found": True, "gold": [r"1 year"]},
            {"value": None, "found": False, "gold": None, "placeholder_kept": True},
        ]
    )
    assert row.value == "1 of 2; unanswerable fields left as placeholders: 1 of 1"


def test_search_columns_count_each_ranking_per_kind_of_question():
    judged = [
        scoring.Judged("p1", "paraphrase", search_rank=None, peer_rank=2, vector_rank=1,
                       hybrid_rank=1, hybrid_rrf_rank=3),
        scoring.Judged("l1", "lookup", search_rank=1, peer_rank=1, vector_rank=7,
                       hybrid_rank=2, hybrid_rrf_rank=1),
        scoring.Judged("u1", "unanswerable"),
    ]  # fmt: skip
    table = scoring.search_columns(judged, top=5).splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table[2:]}
    assert rows["lexical (the API)"] == (
        "| lexical (the API) | 0.50 (1/2) | 0.00 (0/1) | 1.00 (1/1) | 0.50 (1/2) | 0.500 |"
    )
    assert rows["vector only"] == (
        "| vector only | 0.50 (1/2) | 1.00 (1/1) | 0.00 (0/1) | 0.50 (1/2) | 0.571 |"
    )
    assert rows["hybrid, blend"].startswith("| hybrid, blend | 1.00 (2/2) | 1.00 (1/1) | 1.00")


# Issue 27: asserted right / wrong / not found, read from `answer_type` when the API gives it.


def test_not_found_is_read_from_answer_type_when_the_response_has_one() -> None:
    assert scoring.is_not_found("No sentence answers this; the closest passages:", "not_found")
    assert not scoring.is_not_found("Not found in the documents.", "answered")


def test_not_found_falls_back_to_the_text_without_answer_type() -> None:
    assert scoring.is_not_found("Not found in the documents: no passage answers this.")
    assert not scoring.is_not_found(f"{WARRANTY} [1]")


def test_an_asserted_answer_is_right_only_when_it_holds_the_gold_facts() -> None:
    right = scoring.judge(QUESTION, f"{WARRANTY} [1]", [WARRANTY], answer_type="answered")
    wrong = scoring.judge(QUESTION, "It lasts 2 years. [1]", ["x"], answer_type="answered")
    assert (right.asserted_right, right.asserted_wrong, right.not_found) == (True, False, False)
    assert (wrong.asserted_right, wrong.asserted_wrong, wrong.not_found) == (False, True, False)


def test_a_not_found_is_neither_right_nor_wrong_and_may_cite_the_answering_passage() -> None:
    closest = scoring.judge(
        QUESTION, "No sentence answers it.", [WARRANTY], answer_type="not_found"
    )
    elsewhere = scoring.judge(QUESTION, "No sentence answers it.", ["x"], answer_type="not_found")
    assert closest.not_found and not closest.asserted_right and not closest.asserted_wrong
    assert closest.not_found_gold_cited and closest.cited_gold
    assert elsewhere.not_found and not elsewhere.not_found_gold_cited


def test_any_asserted_answer_to_an_unanswerable_question_is_wrong() -> None:
    unanswerable = {"id": "U01", "kind": "unanswerable", "question": "What is the sum?"}
    asserted = scoring.judge(unanswerable, "The sum is $5. [1]", ["x"], answer_type="answered")
    declined = scoring.judge(
        unanswerable, "No sentence answers it.", ["x"], answer_type="not_found"
    )
    assert asserted.asserted_wrong and not asserted.asserted_right
    assert declined.not_found and not declined.asserted_wrong


def test_the_outcome_table_counts_per_set_and_kind_and_unanswerable_apart() -> None:
    paraphrase = {**QUESTION, "id": "P01", "kind": "paraphrase"}
    unanswerable = {"id": "U01", "kind": "unanswerable", "question": "What is the sum?"}
    judged = [
        scoring.judge(QUESTION, f"{WARRANTY} [1]", [WARRANTY], [WARRANTY], [],
                      "answered", "heldout.yaml"),
        scoring.judge(paraphrase, "It lasts 2 years. [1]", ["x"], ["x"], [WARRANTY],
                      "answered", "heldout.yaml"),
        scoring.judge(paraphrase, "No sentence answers it.", [WARRANTY], [], [],
                      "not_found", "heldout.yaml"),
        scoring.judge(unanswerable, "No sentence answers it.", ["x"], [], [],
                      "not_found", "heldout.yaml"),
        scoring.judge(QUESTION, "Not found in the documents.", [], [], [], None, "tuning.yaml"),
    ]  # fmt: skip
    lines = scoring.outcome_table(judged, top=5).splitlines()
    rows = {tuple(c.strip() for c in line.split("|")[1:3]): line for line in lines}
    assert rows[("heldout.yaml", "lookup")] == (
        "| heldout.yaml | lookup | 1 | 100% (1/1) | 0% (0/1) | 0% (0/1) | n/a | 100% (1/1) "
        "| 1.00 (1/1) | 0.00 (0/1) |"
    )
    assert rows[("heldout.yaml", "paraphrase")] == (
        "| heldout.yaml | paraphrase | 2 | 0% (0/2) | 50% (1/2) | 50% (1/2) | 100% (1/1) "
        "| 50% (1/2) | 0.00 (0/2) | 0.50 (1/2) |"
    )
    assert rows[("heldout.yaml", "all answerable")].startswith(
        "| heldout.yaml | all answerable | 3 | 33% (1/3) | 33% (1/3) | 33% (1/3) |"
    )
    assert rows[("tuning.yaml", "lookup")].startswith(
        "| tuning.yaml | lookup | 1 | 0% (0/1) | 0% (0/1) | 100% (1/1) | 0% (0/1) |"
    )
    assert "| heldout.yaml | 1 | 100% (1/1) |" in lines


def test_a_not_found_citing_the_closest_passages_declines_an_unanswerable_question() -> None:
    unanswerable = {"id": "U01", "kind": "unanswerable", "question": "What is the sum?"}
    typed = scoring.judge(unanswerable, "No sentence answers it.", ["x"], answer_type="not_found")
    untyped = scoring.judge(unanswerable, "Not found in the documents.", ["x"])
    assert typed.declined  # answer_type says it; the closest passages are cited on purpose
    assert not untyped.declined  # before answer_type: the plain words and no citation
    rows = scoring.chat_and_search_rows([typed])
    declined = next(r for r in rows if r.measured.startswith('chat answers "not found"'))
    assert declined.value == "100% (1/1)"
