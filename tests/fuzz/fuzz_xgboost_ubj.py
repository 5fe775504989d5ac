"""atheris harness: XGBoost UBJSON (.ubj) through _core.model.parse_xgboost_json. See README.md.

The same entry point as fuzz_xgboost_json.py; the seeds are binary UBJSON, so the fuzzer
explores the binary reader (type markers, counts, typed containers) instead of text syntax.
An input that happens to look like text JSON is read as text, as the parser does for users.
"""

import _harness


def factory(core):
    return lambda data: core.model.parse_xgboost_json(data, -1)[0]


if __name__ == "__main__":
    _harness.run(factory)
