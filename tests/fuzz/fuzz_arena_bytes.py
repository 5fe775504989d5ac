"""atheris harness: serialised arenas (pickled TreeEnsembles) through _core.model.Arena.from_bytes.

See README.md.
"""

import _harness


def factory(core):
    return lambda data: core.model.Arena.from_bytes(data)


if __name__ == "__main__":
    _harness.run(factory)
