"""Finding and filling `{{ field }}` placeholders in real DOCX files made in the tests with
python-docx (tests/documents.py and below), reopening every output with python-docx to check
its text and formatting. Files are written under names without an extension, as blobs are
stored."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from docx import Document
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.shared import Pt, RGBColor

from strongroom.templates.docx_fill import (
    MAX_INSTRUCTION_CHARS,
    FillReport,
    InstructionTooLong,
    Placeholder,
    TemplateError,
    TemplateLimits,
    fill_docx,
    find_placeholders,
)
from tests.documents import (
    make_docx,
    make_docx_template,
    make_pdf,
    make_xlsx,
    make_zip_bomb_docx,
)

LIMIT = 64 * 1024 * 1024
SPLIT = [
    "Dear ",
    ("{{", {"bold": True, "size": 14, "font": "Courier New", "color": "C00000"}),
    (" client", {"italic": True}),
    ("_name }}", {"underline": True, "size": 9}),
    ", welcome.",
]


@pytest.fixture
def blob(tmp_path: Path) -> Callable[[bytes], Path]:
    counter = iter(range(1_000_000))

    def write(data: bytes) -> Path:
        path = tmp_path / f"blob-{next(counter)}"
        path.write_bytes(data)
        return path

    return write


@pytest.fixture
def fill(tmp_path: Path, blob) -> Callable[..., tuple[FillReport, Document]]:
    """Fill the template (bytes or a python-docx Document); the report and the output,
    reopened."""

    def run(template, values: dict, max_unzipped: int = LIMIT):
        source = blob(template if isinstance(template, bytes) else _bytes(template))
        target = source.with_name(source.name + "-filled")
        report = fill_docx(
            source, values, target, limits=TemplateLimits(max_unzipped_bytes=max_unzipped)
        )
        return report, Document(str(target))

    return run


@pytest.fixture
def find(blob) -> Callable[..., list[Placeholder]]:
    def run(template, max_unzipped: int = LIMIT) -> list[Placeholder]:
        data = template if isinstance(template, bytes) else _bytes(template)
        return find_placeholders(blob(data), limits=TemplateLimits(max_unzipped_bytes=max_unzipped))

    return run


def _bytes(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _names(placeholders: list[Placeholder]) -> list[str]:
    return [placeholder.name for placeholder in placeholders]


def _runs(paragraph) -> list[tuple]:
    return [
        (run.text, run.bold, run.italic, run.underline, run.font.size) for run in paragraph.runs
    ]


# Runs


def test_a_placeholder_split_across_runs_is_found(find) -> None:
    assert find(make_docx_template([SPLIT])) == [Placeholder("client_name", None)]


def test_a_split_placeholder_takes_the_formatting_of_the_run_it_starts_in(fill) -> None:
    report, output = fill(make_docx_template([SPLIT]), {"client_name": "Acme Ltd"})

    assert report == FillReport(replaced={"client_name": 1}, missing=[])
    paragraph = output.paragraphs[0]
    assert paragraph.text == "Dear Acme Ltd, welcome."
    value = next(run for run in paragraph.runs if "Acme" in run.text)
    assert value.text == "Acme Ltd"
    assert value.bold is True
    assert value.italic is None
    assert value.underline is None
    assert value.font.size == Pt(14)
    assert value.font.name == "Courier New"
    assert value.font.color.rgb == RGBColor(0xC0, 0x00, 0x00)


def test_runs_wholly_inside_a_placeholder_are_removed_and_neighbours_keep_theirs(fill) -> None:
    _, output = fill(make_docx_template([SPLIT]), {"client_name": "Acme Ltd"})

    assert _runs(output.paragraphs[0]) == [
        ("Dear ", None, None, None, None),
        ("Acme Ltd", True, None, None, Pt(14)),
        (", welcome.", None, None, None, None),
    ]


def test_text_around_a_placeholder_in_its_runs_is_untouched(fill) -> None:
    template = make_docx_template(
        [
            [
                ("Dear ", {"bold": True}),
                ("Mr {{ sur", {"italic": True}),
                ("name }} of ", {"underline": True}),
                ("London", {"size": 20}),
            ]
        ]
    )

    _, output = fill(template, {"surname": "Smith"})

    assert _runs(output.paragraphs[0]) == [
        ("Dear ", True, None, None, None),
        ("Mr Smith", None, True, None, None),
        (" of ", None, None, True, None),
        ("London", None, None, None, Pt(20)),
    ]


def test_a_placeholder_split_by_spelling_marks_and_bookmarks_is_still_found(fill) -> None:
    """Word puts `w:proofErr`, `w:bookmarkStart` and `w:lastRenderedPageBreak` between and
    inside runs; none of them ends a placeholder."""
    document = Document()
    paragraph = document.add_paragraph()
    paragraph.add_run("{{ cli")
    paragraph._p.append(parse_xml(f'<w:proofErr {nsdecls("w")} w:type="spellStart"/>'))
    paragraph._p.append(parse_xml(f'<w:bookmarkStart {nsdecls("w")} w:id="0" w:name="client"/>'))
    second = paragraph.add_run()
    second._r.append(parse_xml(f"<w:lastRenderedPageBreak {nsdecls('w')}/>"))
    second.add_text("ent }}")
    paragraph._p.append(parse_xml(f'<w:bookmarkEnd {nsdecls("w")} w:id="0"/>'))

    report, output = fill(document, {"client": "Acme"})

    assert report.replaced == {"client": 1}
    assert output.paragraphs[0].text == "Acme"


def test_a_placeholder_reads_as_its_text_after_tracked_changes(find, fill) -> None:
    """Deleted runs (`w:del`, their text in `w:delText`) are not part of the text; inserted
    ones (`w:ins`) are."""
    document = Document()
    paragraph = document.add_paragraph()
    paragraph.add_run("{{ cl")
    author = 'w:id="1" w:author="Editor" w:date="2025-01-01T00:00:00Z"'
    paragraph._p.append(
        parse_xml(f"<w:del {nsdecls('w')} {author}><w:r><w:delText>old</w:delText></w:r></w:del>")
    )
    paragraph._p.append(
        parse_xml(f"<w:ins {nsdecls('w')} {author}><w:r><w:t>ient }}}}</w:t></w:r></w:ins>")
    )

    assert find(document) == [Placeholder("client", None)]
    _, output = fill(document, {"client": "Acme"})

    body = output.element.body
    assert [t.text for t in body.xpath(".//w:t")] == ["Acme"]
    assert [t.text for t in body.xpath(".//w:del//w:delText")] == ["old"]


def test_a_placeholder_never_spans_a_tab_or_a_line_break(find) -> None:
    document = Document()
    paragraph = document.add_paragraph()
    paragraph.add_run("{{ a")
    paragraph.add_run().add_tab()
    paragraph.add_run("b }} and {{ c")
    paragraph.add_run().add_break()
    paragraph.add_run("d }}")

    assert find(document) == []


def test_paragraph_style_and_alignment_are_untouched(fill) -> None:
    document = Document()
    heading = document.add_paragraph("Contract with {{ party }}", style="Heading 1")
    heading.alignment = WD_ALIGN_PARAGRAPH.CENTER

    _, output = fill(document, {"party": "Acme"})

    paragraph = output.paragraphs[0]
    assert paragraph.text == "Contract with Acme"
    assert paragraph.style.name == "Heading 1"
    assert paragraph.alignment == WD_ALIGN_PARAGRAPH.CENTER


# Where placeholders are


def test_placeholders_in_tables_and_nested_tables_are_found_and_filled(find, fill) -> None:
    document = Document()
    document.add_paragraph("Schedule for {{ party }}")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Price"
    table.cell(0, 1).text = "{{ price }}"
    nested = table.cell(1, 1).add_table(rows=1, cols=2)
    nested.cell(0, 0).text = "Due"
    run = nested.cell(0, 1).paragraphs[0].add_run("{{ due_date }}")
    run.italic = True

    assert _names(find(document)) == ["party", "price", "due_date"]
    report, output = fill(
        document, {"party": "Acme", "price": "EUR 1,000", "due_date": "1 May 2025"}
    )

    assert report.replaced == {"party": 1, "price": 1, "due_date": 1}
    table = output.tables[0]
    assert table.cell(0, 1).text == "EUR 1,000"
    nested_cell = table.cell(1, 1).tables[0].cell(0, 1)
    assert nested_cell.text == "1 May 2025"
    assert nested_cell.paragraphs[0].runs[0].italic is True


def test_default_and_first_page_headers_and_footers_are_found_and_filled(find, fill) -> None:
    template = make_docx_template(
        ["Body {{ body_field }}"],
        header=["Header {{ header_field }}"],
        footer=["Footer {{ footer_field }}"],
        first_page_header=["First header {{ first_header }}"],
        first_page_footer=["First footer {{ first_footer }}"],
    )

    assert _names(find(template)) == [
        "body_field",
        "header_field",
        "first_header",
        "footer_field",
        "first_footer",
    ]
    values = {name: name.upper() for name in _names(find(template))}
    report, output = fill(template, values)

    assert report.missing == []
    section = output.sections[0]
    assert section.header.paragraphs[0].text == "Header HEADER_FIELD"
    assert section.footer.paragraphs[0].text == "Footer FOOTER_FIELD"
    assert section.first_page_header.paragraphs[0].text == "First header FIRST_HEADER"
    assert section.first_page_footer.paragraphs[0].text == "First footer FIRST_FOOTER"


def test_even_page_headers_and_every_sections_headers_are_filled(find, fill) -> None:
    document = Document()
    document.settings.odd_and_even_pages_header_footer = True
    document.add_paragraph("Part one")
    first = document.sections[0]
    first.header.paragraphs[0].text = "Odd {{ odd }}"
    first.even_page_header.paragraphs[0].text = "Even {{ even }}"
    first.even_page_footer.paragraphs[0].text = "Even footer {{ even_footer }}"
    second = document.add_section()
    document.add_paragraph("Part two")
    second.header.is_linked_to_previous = False
    second.header.paragraphs[0].text = "Second {{ second }}"

    assert _names(find(document)) == ["odd", "even", "even_footer", "second"]
    _, output = fill(document, {"odd": "1", "even": "2", "even_footer": "3", "second": "4"})

    one, two = output.sections
    assert one.header.paragraphs[0].text == "Odd 1"
    assert one.even_page_header.paragraphs[0].text == "Even 2"
    assert one.even_page_footer.paragraphs[0].text == "Even footer 3"
    assert two.header.paragraphs[0].text == "Second 4"


def _vml_text_box(text: str) -> str:
    return (
        '<w:pict><v:shape id="box" style="width:200pt;height:40pt" type="#_x0000_t202">'
        f"<v:textbox><w:txbxContent><w:p><w:r><w:rPr><w:b/></w:rPr><w:t>{text}</w:t></w:r>"
        "</w:p></w:txbxContent></v:textbox></v:shape></w:pict>"
    )


def test_text_boxes_are_found_and_filled_and_counted_once(find, fill) -> None:
    """A Word 2010+ text box is a drawing (`wps:txbx`) with a VML copy as its fallback, both
    inside one run of an outer paragraph: both copies are filled, counted once, and the outer
    paragraph's own text is left alone."""
    document = Document()
    paragraph = document.add_paragraph("Before {{ outer }} ")
    namespaces = nsdecls("w", "wp", "a") + (
        ' xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
        ' xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
        ' xmlns:v="urn:schemas-microsoft-com:vml"'
    )
    paragraph._p.append(
        parse_xml(
            f"<w:r {namespaces}><mc:AlternateContent>"
            '<mc:Choice Requires="wps"><w:drawing><wp:inline>'
            '<wp:extent cx="2540000" cy="508000"/><wp:docPr id="1" name="Text Box 1"/>'
            "<a:graphic><a:graphicData "
            'uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
            "<wps:wsp><wps:spPr/><wps:txbx><w:txbxContent><w:p><w:r><w:rPr><w:b/></w:rPr>"
            "<w:t>Box: {{ in_box }}</w:t></w:r></w:p></w:txbxContent></wps:txbx><wps:bodyPr/>"
            "</wps:wsp></a:graphicData></a:graphic></wp:inline></w:drawing></mc:Choice>"
            f"<mc:Fallback>{_vml_text_box('Box: {{ in_box }}')}</mc:Fallback>"
            "</mc:AlternateContent></w:r>"
        )
    )
    paragraph.add_run(" after")

    assert _names(find(document)) == ["outer", "in_box"]
    report, output = fill(document, {"in_box": "Acme"})

    assert report == FillReport(replaced={"in_box": 1}, missing=["outer"])
    boxes = output.element.body.xpath(".//w:txbxContent//w:t")
    assert [box.text for box in boxes] == ["Box: Acme", "Box: Acme"]
    assert all(box.getparent().rPr.b is not None for box in boxes)
    assert output.paragraphs[0].text == "Before {{ outer }}  after"


# Occurrences, names and instructions


def test_every_occurrence_of_a_field_is_replaced_and_counted(fill) -> None:
    template = make_docx_template(
        ["{{ party }} and {{party}} agree.", "Signed by {{  party  }}."],
        table=[["{{ party }}", "{{ other }}"]],
        header=["{{ party }}"],
    )

    report, output = fill(template, {"party": "Acme"})

    assert report == FillReport(replaced={"party": 5}, missing=["other"])
    assert [p.text for p in output.paragraphs] == ["Acme and Acme agree.", "Signed by Acme."]
    assert output.tables[0].cell(0, 0).text == "Acme"
    assert output.sections[0].header.paragraphs[0].text == "Acme"


def test_an_instruction_follows_a_bar_and_names_collapse_their_white_space(find, fill) -> None:
    template = make_docx_template(
        [
            "{{ Client   name |  the buyer's  full legal name }}",
            "{{ effective.date-1 | }}",
            "{{ governing_law|the law named in the contract | or its country }}",
        ]
    )

    assert find(template) == [
        Placeholder("Client name", "the buyer's full legal name"),
        Placeholder("effective.date-1", None),
        Placeholder("governing_law", "the law named in the contract | or its country"),
    ]
    report, output = fill(template, {" Client name ": "Acme", "governing_law": "English"})

    assert report.replaced == {"Client name": 1, "governing_law": 1}
    assert report.missing == ["effective.date-1"]
    assert [p.text for p in output.paragraphs] == ["Acme", "{{ effective.date-1 | }}", "English"]


def test_names_are_compared_case_sensitively(fill) -> None:
    report, output = fill(make_docx_template(["{{ Party }}"]), {"party": "Acme"})

    assert report == FillReport(replaced={}, missing=["Party"])
    assert output.paragraphs[0].text == "{{ Party }}"


def test_the_first_instruction_given_for_a_name_wins(find) -> None:
    template = make_docx_template(
        ["{{ date }}", "{{ date | the signing date }}", "{{ date | the delivery date }}"]
    )

    assert find(template) == [Placeholder("date", "the signing date")]


def test_other_text_between_braces_stays_literal(find, fill) -> None:
    literals = ["{{ a/b }}", "{{}}", "{{ | x }}", "{ {x} }", "{{ a {b} }}", "{{ é!? }}"]
    template = make_docx_template([*literals, "{{{ real }}}"])

    assert find(template) == [Placeholder("real", None)]
    _, output = fill(template, {"real": "R", "a/b": "no", "x": "no"})

    assert [p.text for p in output.paragraphs] == [*literals, "{R}"]


def test_names_may_hold_letters_of_any_script(find) -> None:
    assert _names(find(make_docx_template(["{{ Käufer_名前 }}"]))) == ["Käufer_名前"]


# Missing values and values


def test_missing_values_are_left_as_they_are_and_reported(fill) -> None:
    template = make_docx_template(
        [["Amount: ", ("{{ amount | the ", {"bold": True}), ("total price }}", {"italic": True})]]
    )

    report, output = fill(template, {"party": "unused", "amount": None})

    assert report == FillReport(replaced={}, missing=["amount"])
    assert _runs(output.paragraphs[0]) == [
        ("Amount: ", None, None, None, None),
        ("{{ amount | the ", True, None, None, None),
        ("total price }}", None, True, None, None),
    ]


def test_a_value_is_text_and_its_newlines_become_line_breaks(fill, blob) -> None:
    value = 'A < B & C\nsecond line <w:b/> "quoted"\tend'
    template = make_docx_template([[("Note: {{ note }}!", {"italic": True})]])

    report, output = fill(template, {"note": value})

    assert report.replaced == {"note": 1}
    paragraph = output.paragraphs[0]
    assert paragraph.text == 'Note: A < B & C\nsecond line <w:b/> "quoted"\tend!'
    assert len(paragraph.runs) == 1
    run = paragraph.runs[0]
    assert run.italic is True
    assert [child.tag for child in run._r if child.tag != qn("w:rPr")] == [
        qn("w:t"),
        qn("w:br"),
        qn("w:t"),
        qn("w:tab"),
        qn("w:t"),
    ]
    assert run._r.xpath("w:rPr/w:b") == []


def test_characters_xml_cannot_hold_are_dropped_and_form_feeds_break_lines(fill) -> None:
    report, output = fill(make_docx_template(["{{ x }}"]), {"x": "a\x00b\x0cc\r\nd\ud800"})

    assert report.replaced == {"x": 1}
    assert output.paragraphs[0].text == "ab\nc\nd"


def test_an_empty_value_removes_the_placeholder(fill) -> None:
    _, output = fill(make_docx_template([SPLIT]), {"client_name": ""})

    assert output.paragraphs[0].text == "Dear , welcome."


# Documents without placeholders, and bad files


def test_a_docx_without_placeholders_gives_none_and_an_identical_text_copy(
    find, fill, blob
) -> None:
    template = make_docx(
        ["First paragraph {with braces}.", "Second { { one } }."],
        table=[["a", "b"], ["c", "{d}"]],
    )

    assert find(template) == []
    report, output = fill(template, {"anything": "x"})

    assert report == FillReport(replaced={}, missing=[])
    original = Document(str(blob(template)))
    assert [p.text for p in output.paragraphs] == [p.text for p in original.paragraphs]
    assert [c.text for c in output.tables[0]._cells] == ["a", "b", "c", "{d}"]


def test_filling_leaves_the_source_file_unchanged(tmp_path: Path, blob) -> None:
    data = make_docx_template([SPLIT])
    source = blob(data)

    fill_docx(
        source,
        {"client_name": "Acme"},
        tmp_path / "out",
        limits=TemplateLimits(max_unzipped_bytes=LIMIT),
    )

    assert source.read_bytes() == data


def _truncated_docx() -> bytes:
    data = make_docx(["{{ x }}"])
    return data[: len(data) // 2]


def _docx_with_broken_xml() -> bytes:
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(make_docx(["{{ x }}"]))) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy,
    ):
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                data = data[: len(data) // 2]
            copy.writestr(info.filename, data)
    return out.getvalue()


BAD_FILES = {
    "text": b"{{ not a docx }}",
    "empty": b"",
    "pdf": make_pdf(["{{ x }}"]),
    "xlsx": make_xlsx({"Sheet": [["{{ x }}"]]}),
    "truncated": _truncated_docx(),
    "broken xml": _docx_with_broken_xml(),
}


@pytest.mark.parametrize("data", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_file_that_is_not_a_readable_docx_raises_template_error(
    tmp_path: Path, blob, data: bytes
) -> None:
    source = blob(data)
    with pytest.raises(TemplateError):
        find_placeholders(source, limits=TemplateLimits(max_unzipped_bytes=LIMIT))
    with pytest.raises(TemplateError):
        fill_docx(
            source, {"x": "y"}, tmp_path / "out", limits=TemplateLimits(max_unzipped_bytes=LIMIT)
        )
    assert not (tmp_path / "out").exists()


def test_a_file_that_does_not_exist_is_not_a_template_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        find_placeholders(tmp_path / "nothing", limits=TemplateLimits(max_unzipped_bytes=LIMIT))


@pytest.mark.parametrize("lie_about_size", [False, True], ids=["honest", "lying"])
def test_a_zip_bomb_is_refused(tmp_path: Path, blob, lie_about_size: bool) -> None:
    source = blob(make_zip_bomb_docx(4 * 1024 * 1024, lie_about_size=lie_about_size))
    with pytest.raises(TemplateError, match="bytes"):
        find_placeholders(source, limits=TemplateLimits(max_unzipped_bytes=1024 * 1024))
    with pytest.raises(TemplateError, match="bytes"):
        fill_docx(
            source, {}, tmp_path / "out", limits=TemplateLimits(max_unzipped_bytes=1024 * 1024)
        )
    assert not (tmp_path / "out").exists()


def test_a_docx_within_max_unzipped_is_read(find) -> None:
    """The bound is what refuses the bomb above, not its shape: the same file reads under a
    larger one."""
    data = make_zip_bomb_docx(4 * 1024 * 1024)
    assert find(data, max_unzipped=8 * 1024 * 1024) == []


def test_an_instruction_is_capped_like_a_chat_query_at_8000_characters(tmp_path: Path) -> None:
    """Issue 28: a 96 KB DOCX held a 28 MB instruction, stored and returned by every poll."""
    fits = tmp_path / "fits.docx"
    fits.write_bytes(make_docx_template(["{{ total | " + "w" * MAX_INSTRUCTION_CHARS + " }}"]))
    [placeholder] = find_placeholders(fits, limits=TemplateLimits())
    assert len(placeholder.instruction or "") == MAX_INSTRUCTION_CHARS
    too_long = tmp_path / "too-long.docx"
    too_long.write_bytes(make_docx_template(["{{ total | " + "w" * 8_001 + " }}"]))
    with pytest.raises(InstructionTooLong, match="longer than 8,000 characters"):
        find_placeholders(too_long, limits=TemplateLimits())
