"""Test doubles shared by several test modules (imported as ``from doubles import ...``)."""

from __future__ import annotations


class Opaque:
    """Hides a predictor's type: a tracker cannot read it as affine and takes its generic (Python) path."""

    def __init__(self, inner):
        self.inner = inner

    def predict(self, X):
        return self.inner.predict(X)

    def update(self, X, y):
        self.inner.update(X, y)
