"""English stop words: the Snowball list PostgreSQL's `english` text-search configuration
uses (`tsearch_data/english.stop`). Search drops them from queries on both backends, so the
embedded SQLite (whose FTS5 keeps every word) ranks like PostgreSQL."""

STOP_WORDS = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now
    """.split()
)

# Words a question is phrased with that say nothing about what it asks for ("How many days
# does the contractor have to ..."): left out of questions, never of passages.
QUESTION_WORDS = frozenset(
    """
    us many much long would could may might must shall get gets got tell say says said
    does happen happens need needs give gives given also anything something kind sort
    """.split()
)
