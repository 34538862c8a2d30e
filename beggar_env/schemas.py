"""One vocabulary for the JSON Schemas of the files the package reads back: whole numbers
in a range, numbers, intervals, nullable values, lists and objects.

Every file a user may hand the package (a forecast report, the study's ``results.json``, a
cycles census) is checked against a JSON Schema before anything is read from it
(:func:`beggar_env.files.check_schema`). The schemas are written with these few pieces so
that one thing is said one way: ``integer(0)`` is a count, ``nullable(number(0, 1))`` a
probability that may be missing, ``interval()`` a 95% interval. Each piece is a plain dict
of JSON Schema, keys in the order that the error messages follow (``type`` first, then the
bounds; ``required`` before ``properties``), so a schema written with them reads and refuses
exactly as one written out by hand.
"""

NULL = {"type": "null"}
NUMBER = {"type": "number"}


def integer(low=None, high=None) -> dict:
    """A whole number (``2.0`` is not one: :func:`beggar_env.files.check_schema`) from
    ``low`` to ``high``, both included; None: unbounded on that side."""
    return _bounded({"type": "integer"}, low, high)


def number(low=None, high=None, *, above=None) -> dict:
    """A number from ``low`` to ``high`` (both included), or greater than ``above``
    (excluded); None: unbounded on that side."""
    schema = {"type": "number"}
    if above is not None:
        schema["exclusiveMinimum"] = above
    return _bounded(schema, low, high)


def _bounded(schema, low, high):
    if low is not None:
        schema["minimum"] = low
    if high is not None:
        schema["maximum"] = high
    return schema


def array(items, fewest=None, most=None) -> dict:
    """A list of ``items``, of ``fewest`` to ``most`` entries (None: any number)."""
    schema = {"type": "array", "items": items}
    if fewest is not None:
        schema["minItems"] = fewest
    if most is not None:
        schema["maxItems"] = most
    return schema


def interval(item=NUMBER) -> dict:
    """An interval ``[low, high]``: two ``item`` (that low <= high is the reader's to check:
    a schema cannot compare two values)."""
    return array(item, 2, 2)


def nullable(schema) -> dict:
    """``schema``, or null (a figure that could not be had, a value not known)."""
    return {"anyOf": [schema, NULL]}


def obj(properties, *, optional=(), closed=False) -> dict:
    """An object of ``properties`` (name: schema), each required but those named in
    ``optional``; ``closed``: no other key (else any other key is let through)."""
    schema = {"type": "object", "required": [name for name in properties if name not in optional]}
    if closed:
        schema["additionalProperties"] = False
    schema["properties"] = dict(properties)
    return schema
