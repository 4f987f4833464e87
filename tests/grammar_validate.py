"""Validate constrained-generation outputs (test_grammar_model.c) with
jsonschema 4.26 from the project venv: argv[1] is a JSON-lines file of
{"schema": ..., "output": "...", "complete": bool}; every complete output
must be JSON that validates against its schema (formats checked too).
Prints one line per failure and a summary; exit 1 on any failure."""
import json
import sys

import jsonschema

bad = 0
done = 0
total = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for n, line in enumerate(f):
        rec = json.loads(line)
        total += 1
        if not rec["complete"]:
            continue
        done += 1
        try:
            doc = json.loads(rec["output"])
            cls = jsonschema.validators.validator_for(rec["schema"])
            cls(rec["schema"], format_checker=cls.FORMAT_CHECKER).validate(doc)
        except Exception as e:  # any failure is the test's failure
            bad += 1
            print(f"case {n}: {type(e).__name__}: {str(e)[:300]}\n  output: {rec['output'][:300]!r}")
print(f"validated {done} complete outputs of {total}; {bad} invalid")
sys.exit(1 if bad else 0)
