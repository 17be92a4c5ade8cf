"""One thin module per Lambda: parse typed input, call benchfleet, return."""
