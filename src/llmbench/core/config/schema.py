"""The config's schema check: ``workflow/schemas/config.schema.yaml`` with JSON Schema's
own bounds, one line per error naming the key, the bad value and what is allowed, and the
schema's defaults filled in."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from llmbench.core.catalog.load import parse_package_yaml
from llmbench.core.value_checks import dotted_key
from llmbench.errors import ConfigError


def _is_integer(_checker: Any, value: Any) -> bool:
    # JSON Schema calls 50.0 an integer; a step count or scale of 50.0 is a typo here.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: Any, value: Any) -> bool:
    # Bounds never fail for NaN (every comparison is false): refuse it as a type.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@cache
def _schema_regex(pattern: str) -> re.Pattern[str]:
    # JSON Schema patterns are ECMA-262 regexes, whose `$` matches only at the end of the
    # value; Python's `$` also matches before a final newline ("ns\n" would pass).
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _pattern(
    validator: Any, pattern: str, instance: Any, _schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not _schema_regex(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}
    ),
)


@cache
def config_schema() -> dict[str, Any]:
    text = resources.files("llmbench.core").joinpath("schemas/config.schema.yaml").read_text()
    return parse_package_yaml(text, "config.schema.yaml")


def schema_checked(config: dict[str, Any], source: str) -> dict[str, Any]:
    """``config`` checked against the schema (``ConfigError``: the best match's one line),
    with the schema's defaults filled in."""
    validator = _Validator(config_schema())
    err = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if err is not None:
        raise ConfigError(f"{source}: {_schema_error_line(err)}")
    return _with_defaults(config, config_schema())


def _schema_error_line(err: jsonschema.ValidationError) -> str:
    where = dotted_key(err.absolute_path)
    value = err.instance
    if err.validator == "type" and isinstance(value, float) and not math.isfinite(value):
        return f"{where}: {value} is not a finite number; allowed: {_allowed_type(err)}"
    types = _types(err) if err.validator == "type" else []
    if isinstance(value, float) and "integer" in types and "number" not in types:
        return f"{where}: {value!r} is not a whole number; allowed: {_allowed_type(err)}"
    if types == ["string"] and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'{where}: {value!r} is a number, not text; allowed: a string (quoted: "{value}")'
    if err.validator == "enum":
        allowed = ", ".join(map(str, err.validator_value))
        return f"{where}: {err.instance!r} is not allowed; allowed: {allowed}"
    if err.validator == "additionalProperties":
        allowed = ", ".join(sorted(err.schema.get("properties", {})))
        return f"{where}: {err.message}; allowed keys: {allowed}"
    return f"{where}: {err.message}"


def _types(err: jsonschema.ValidationError) -> list[str]:
    types = err.validator_value
    return [types] if isinstance(types, str) else list(types)


def _allowed_type(err: jsonschema.ValidationError) -> str:
    bounds = [f"{word} {err.schema[key]}" for key, word in _BOUNDS if key in err.schema]
    kind = " or ".join("a whole number" if t == "integer" else t for t in _types(err))
    return " ".join([kind, " and ".join(bounds)]).strip()


_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("exclusiveMaximum", "<"),
)


def _with_defaults(instance: Any, schema: Mapping[str, Any]) -> Any:
    """Fill ``default`` values from the schema (objects and arrays of objects)."""
    if isinstance(instance, dict) and "properties" in schema:
        for key, sub in schema["properties"].items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                instance[key] = _with_defaults(instance[key], sub)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [_with_defaults(item, schema["items"]) for item in instance]
    return instance
