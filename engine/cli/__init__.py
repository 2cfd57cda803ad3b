"""The product's command line, one module per command (`main.py <command>`): ask, fleet, review, agents
(`reputation`), audit, alerts, memory, tools, trace, index, llm. Each has `add_parser(sub)` and `run(args) -> int`
and imports its engine parts only when it runs, so that building the parser stays cheap. `common` holds the
options they share; `exit_codes` the one table of exit codes (bench's commands use it too).

main.py builds the parser from these modules, the bench's (eval, bench, gateway) and the console's (screenshot,
bench ui), and dispatches; the console itself starts without importing any of them.
"""
