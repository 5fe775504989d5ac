"""atheris harness: LightGBM text models through _core.model.parse_lightgbm_text. See README.md."""

import _harness


def factory(core):
    return lambda data: core.model.parse_lightgbm_text(data, -1)[0]


if __name__ == "__main__":
    _harness.run(factory)
