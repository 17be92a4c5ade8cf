"""What a run will do and cost before it starts: the Plan state, its estimate and limits."""
