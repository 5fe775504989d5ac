"""One helper imports the optional dependencies; its message names the extra to install."""

from __future__ import annotations

import pytest

from pgexact._optional import install_hint, optional, require


def test_require_names_what_needs_it_and_the_extra():
    assert install_hint("shap") == "pip install 'pgexact[all]'"
    assert install_hint("matplotlib.pyplot") == "pip install 'pgexact[all]'"
    assert install_hint("distributed") == "pip install 'pgexact[dask]'"
    with pytest.raises(ImportError, match=r"frobnicate\(\) needs the pgexact_no_such_module "
                                          r"package: pip install pgexact_no_such_module"):
        require("pgexact_no_such_module", "frobnicate()")


def test_optional_returns_none_when_missing():
    assert optional("pgexact_no_such_module") is None
    assert optional("numpy") is not None


def test_metrics_keeps_its_public_names():
    from pgexact import metrics

    for name in metrics.__all__:
        assert callable(getattr(metrics, name))
