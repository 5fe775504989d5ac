"""atheris harness: XGBoost text JSON through _core.model.parse_xgboost_json. See README.md."""

import _harness


def factory(core):
    return lambda data: core.model.parse_xgboost_json(data, -1)[0]


if __name__ == "__main__":
    _harness.run(factory)
