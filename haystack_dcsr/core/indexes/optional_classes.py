"""``isinstance`` against a class of an optional integration, without importing the integration.

An adapter must recognise a store of, say, ``qdrant-haystack`` without making it a dependency. An object of a
class means the class's module is imported already, so the test looks the class up in ``sys.modules``: a real
``isinstance`` (subclasses included), never a comparison of class names, and no import of an integration the
user does not have.
"""

import sys
from typing import Any


def is_instance(value: Any, module: str, name: str) -> bool:
    """Whether ``value`` is an instance of class ``name`` of ``module`` (False when that module is not imported)."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(value, cls)
