"""DOCX templates: finding `{{ field }}` placeholders and filling them in (issue 9)."""
