"""The signing key a run's seal, a certificate and a calibration are signed with: created on
first use outside the runs folder (``$XDG_CONFIG_HOME/assay/signing.key``, else
``~/.config/assay/signing.key``, or the file ``ASSAY_SIGNING_KEY_FILE`` names), readable by its
owner only, never created by a reader that only verifies; a key that cannot be created or
read is one line naming the file and the variable."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from assay import _signing as signing
from assay.errors import ConfigError


@pytest.fixture
def no_named_key(monkeypatch, tmp_path):
    """No ``ASSAY_SIGNING_KEY_FILE`` (the suite names one), a home and config folder of the
    test's own."""
    monkeypatch.delenv(signing.KEY_FILE_ENV, raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_key_is_created_on_first_use_for_its_owner_alone(no_named_key, monkeypatch):
    assert signing.key_file() == no_named_key / "home" / ".config" / "assay" / "signing.key"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(no_named_key / "cfg"))
    path = signing.key_file()
    assert path == no_named_key / "cfg" / "assay" / "signing.key" and not path.exists()

    signature = signing.sign({"verdicts": [1, 0, 1]})  # a writer creates the key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(path.read_bytes().strip()) >= 32
    assert signing.verify({"verdicts": [1, 0, 1]}, signature)
    assert not signing.verify({"verdicts": [1, 1, 1]}, signature)

    kept = path.read_bytes()
    assert signing.ensure_key() == path and path.read_bytes() == kept  # created once


def test_a_reader_never_creates_the_key(no_named_key):
    with pytest.raises(ConfigError, match=r"signing\.key: no signing key.*ASSAY_SIGNING_KEY_FILE"):
        signing.verify({"verdicts": [1]}, "0" * 64)
    assert not signing.key_file().exists()
    with pytest.raises(ConfigError, match="no signing key"):
        signing.key(create=False)


@pytest.mark.parametrize(
    "make, refused",
    [
        (lambda p: p.write_text("short\n"), r"a signing key of 5 bytes; a key has at least 32"),
        (lambda p: p.mkdir(parents=True), r"cannot read the signing key .*ASSAY_SIGNING_KEY_FILE"),
    ],
    ids=["too short", "a folder"],
)
def test_a_key_that_cannot_be_read_is_one_line(tmp_path, monkeypatch, make, refused):
    path = tmp_path / "keys" / "signing.key"
    path.parent.mkdir(exist_ok=True)
    make(path)
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(path))
    with pytest.raises(ConfigError, match=refused) as info:
        signing.sign({"x": 1})
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_a_key_that_cannot_be_created_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the key's folder would be\n")
    path: Path = blocker / "signing.key"
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(path))
    with pytest.raises(
        ConfigError, match=r"cannot create the signing key .*ASSAY_SIGNING_KEY_FILE"
    ):
        signing.ensure_key()


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606, 0o600, 0o400])
def test_a_key_open_to_others_is_said_once(tmp_path, monkeypatch, caplog, mode):
    """A key file others can read (and so sign as assay) or write (and so replace) is used,
    with one warning naming it; the owner's own key (0600, as assay creates it) says nothing."""
    key = tmp_path / "team.key"
    key.write_text("k" * 64 + "\n")
    key.chmod(mode)
    monkeypatch.setenv(signing.KEY_FILE_ENV, str(key))
    monkeypatch.setattr(signing, "_SHARED_KEYS", set())
    with caplog.at_level("WARNING", logger="assay._signing"):
        first = signing.sign({"a": 1})
        assert signing.verify({"a": 1}, first)
    said = [r.getMessage() for r in caplog.records if r.name == "assay._signing"]
    if mode & 0o077:
        assert said == [f"assay: {key}: the signing key is open to others than its owner (mode "
                        f"{mode:03o}): whoever can read it can sign as assay, whoever can write it "
                        "can replace it — chmod 600 it"]  # fmt: skip
    else:
        assert said == []
