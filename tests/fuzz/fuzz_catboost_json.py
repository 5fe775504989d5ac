"""atheris harness: CatBoost JSON models through _core.model.parse_catboost_json. See README.md."""

import _harness


def factory(core):
    return lambda data: core.model.parse_catboost_json(data, -1)[0]


if __name__ == "__main__":
    _harness.run(factory)
