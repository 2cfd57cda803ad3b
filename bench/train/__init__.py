"""Training the injection gateway's classifier (`main.py gateway train`): `gateway` fits it on the dev split of
the shared data and writes the weights the engine ships (engine/gateway/scanners/classifier.py loads them);
`cli` is the command."""
