"""A question's trajectory as explicit stages (formulate, retrieve, reason, tool, synthesize) with observers."""
