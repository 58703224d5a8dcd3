"""The stored documents and passages every stage of a document's life shares."""
