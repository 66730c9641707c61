"""A Jepsen-style fault campaign against a real 3-controller, 5-broker cluster (every node in
its own network namespace): `python -m tests.campaign --help`, docs/reliability.md."""
