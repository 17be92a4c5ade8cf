"""One step on a host: the agent's job, Run Command, its callback, and collecting its output."""
