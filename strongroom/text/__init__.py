"""Words as every stage sees them: the one analysis (terms, stems, thesaurus concepts) that
the index, search and the answer engines share, sentences, typed values, and a question read
once for everything that answers it."""
