"""In-process reference implementations of every storage port: what the contract
suites are checked against first, and what tests and throw-away uses run on. Data is
lost when the process ends."""
