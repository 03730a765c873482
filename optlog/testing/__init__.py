"""Stand-ins that optlog ships because its demo and its tests need a server to measure: an
OpenAI-compatible streaming server with a fixed token schedule (`fakeserver`)."""
