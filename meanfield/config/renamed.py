"""Keys renamed so that one word names one concept (docs/glossary.md): a config using an
old name is refused with the new one, in a file, a dict and through ``--set``; configs
saved under an old name (result files) are read under the new one (``from_json``)."""
from __future__ import annotations

from meanfield.errors import ConfigError

# old dotted key -> new dotted key
RENAMED_KEYS: dict[str, str] = {
    "particles.model": "particles.architecture",  # "model" is the physics layer
    "particles.method": "particles.sum_method",  # "method" is the PDE discretization
    "initial.normalize": "initial.unit_rows",  # "normalized" is SA vs USA
}


def renamed_key_error(key: str) -> ConfigError | None:
    """The ConfigError for a key of ``RENAMED_KEYS`` (None for any other key)."""
    if key not in RENAMED_KEYS:
        return None
    return ConfigError(f"{key} was renamed to {RENAMED_KEYS[key]}", key)


def migrate(raw: dict) -> dict:
    """``raw`` (a config dict, changed in place and returned) with every old key of
    ``RENAMED_KEYS`` moved to its new name (a new name already present wins)."""
    for old, new in RENAMED_KEYS.items():
        (section, name), (_, new_name) = old.split("."), new.split(".")
        table = raw.get(section)
        if isinstance(table, dict) and name in table:
            table.setdefault(new_name, table.pop(name))
    return raw
