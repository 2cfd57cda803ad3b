"""The thought-virus gateway: envelopes with trust levels, injection scanners, decisions per channel."""
