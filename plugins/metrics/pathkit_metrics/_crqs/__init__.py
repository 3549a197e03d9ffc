"""CRQS internals: clinical schemas, text normalisation, vocabulary, field extraction and comparison."""
