"""The synthesized tier: checks that read what `cdk synth` deploys. The session's one synth is the
``synthesized`` fixture of tests/conftest.py (tests/statemachine uses it too)."""
