"""Command-line options declared once, on the fields of the settings they fill: a field's ``flag(...)`` metadata
gives its option's help (and name, where it is not the field's), the field gives its default and type. A field whose
type is itself such a dataclass (a value object) adds its own fields' options, and is built from them."""
from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

FLAG = "flag"


@dataclass(frozen=True)
class Flag:
    help: str
    name: str = ""  # the option, such as --lake; default: --<field-name>; without dashes: a positional argument
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    default_help: str = ""  # how help tells the default, where its value alone would not
    exclusive: str = ""  # options of one group name: a command takes at most one of them
    short: str = ""  # a one-letter alias, such as -f


def flag(help: str, **settings) -> dict:
    """A field's metadata: ``field(default=..., metadata=flag("what it is"))``."""
    return {FLAG: Flag(help, **settings)}


def day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid day {text!r}: use YYYY-MM-DD, for example 2024-01-02") from None


def _parser_of(kind: type):
    """How an option's text becomes the field's type (booleans are switches, tuples repeated options)."""
    return {int: int, float: float, date: day, Path: Path}.get(kind)


def _shown(value) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H")
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else dataclasses.MISSING


def _plain(hint):
    """``int | None`` -> int."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return next(arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


@dataclass(frozen=True)
class Declared:
    """One field's option: the field, its value's type, and where argparse keeps what was given."""

    field: dataclasses.Field
    kind: type
    flag: Flag

    @property
    def dest(self) -> str:
        return (self.flag.name or self.field.name).lstrip("-").replace("-", "_")

    def arguments(self, required: bool) -> tuple[tuple[str, ...], dict]:
        flag, default = self.flag, _default(self.field)
        if flag.name and not flag.name.startswith("-"):
            return (flag.name,), {"help": flag.help, **({"choices": flag.choices} if flag.choices else {}),
                                  **({"nargs": "*", "default": []} if typing.get_origin(self.kind) is tuple else {})}
        settings = {"dest": self.dest, "help": flag.help, **({"metavar": flag.metavar} if flag.metavar else {})}
        if self.kind is bool:
            settings["action"] = "store_true"
        elif typing.get_origin(self.kind) is tuple:
            settings.update(action="append", default=[])
        else:
            settings.update(type=_parser_of(self.kind), choices=flag.choices or None)
            if default is dataclasses.MISSING or required:
                settings["required"] = True
            else:
                settings["default"] = default
                if flag.default_help:
                    settings["help"] = f"{flag.help} (default: {flag.default_help})"
                elif default not in (None, ""):
                    settings["help"] = f"{flag.help} (default {_shown(default)})"
        return (*([flag.short] if flag.short else []), flag.name or f"--{self.field.name.replace('_', '-')}"), settings


def declared(settings: type) -> list[Declared]:
    """The options of a settings class, its value objects' included, in field order."""
    hints = typing.get_type_hints(settings)
    found = []
    for field in dataclasses.fields(settings):
        kind = _plain(hints[field.name])
        if dataclasses.is_dataclass(kind):
            found.extend(declared(kind))
        elif FLAG in field.metadata:
            found.append(Declared(field, kind, field.metadata[FLAG]))
    return found


@dataclass(frozen=True)
class Options:
    """The options of a settings class that a command takes: all of them, ``only`` these fields, or all but
    ``without`` these; ``required`` fields must be given on this command (a replay's window) though the class has a
    default."""

    settings: type
    only: tuple[str, ...] = ()
    without: tuple[str, ...] = ()
    required: tuple[str, ...] = ()

    def taken(self) -> list[Declared]:
        return [d for d in declared(self.settings)
                if (not self.only or d.field.name in self.only) and d.field.name not in self.without]

    def add_to(self, command: argparse.ArgumentParser) -> None:
        groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
        for option in self.taken():
            names, settings = option.arguments(option.field.name in self.required)
            exclusive = option.flag.exclusive
            if exclusive and exclusive not in groups:
                groups[exclusive] = command.add_mutually_exclusive_group()
            target = groups[exclusive] if exclusive else command
            target.add_argument(*names, **settings)

    def build(self, args: argparse.Namespace, **given):
        """The settings from the parsed ``args`` (fields this command does not take keep their defaults), and
        ``given`` values."""
        return _build(self.settings, vars(args), {d.field: d for d in self.taken()}, given)


def _build(settings: type, parsed: dict, taken: dict[dataclasses.Field, Declared], given: dict):
    hints, values = typing.get_type_hints(settings), dict(given)
    for field in dataclasses.fields(settings):
        kind = _plain(hints[field.name])
        if field.name in values:
            continue
        if dataclasses.is_dataclass(kind):
            values[field.name] = _build(kind, parsed, taken, {})
        elif field in taken:  # by the field itself: a value object's field may share another's name
            value = parsed[taken[field].dest]
            values[field.name] = tuple(value) if typing.get_origin(kind) is tuple else value
    return settings(**values)
