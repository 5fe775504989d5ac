"""The user's data: rows and column order (``_rows``, ``_columns``), feature arguments that
follow ``X``'s columns (``_features``) and scalar arguments (``_scalars``), each checked into
the canonical form the rest of the package reads. Imports nothing else of pgexact.
"""

__all__: list[str] = []
