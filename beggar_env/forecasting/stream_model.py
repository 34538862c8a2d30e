"""A stream model that plays the game forward from the cards' faces, with no engine, no
machine and no table at forecast time: a small causal transformer over the tokens of
:mod:`~beggar_env.forecasting.face_streams`, trained by next-token loss on whole engine
games, rolled out greedily (or sampled) until it writes ``END``; the cards no one has seen yet
(which no stream can know) come from a completion drawn as the Bayes forecaster draws one
(:func:`roll_out`'s ``unseen``).

The network (:class:`StreamNet`): each token's kind, face, size and the face it was played
on (the card beneath it on the pile, as the table shows it: :func:`face_streams.under`)
embedded and summed;
pre-norm blocks of causal self-attention with an ALiBi-style linear bias by distance (one
slope per head, one head with none) and a hard window of ``window`` tokens, so a model
trained on windows of ``length`` tokens reads any game, however long, with the same
attention; three heads read the next token's kind, face and size.

Training (:func:`window_batch`, :func:`loss`): windows cut from fresh random games, the
loss of a face left out where the face has not been played before in the window (nothing
to copy: the first appearances), a small share of the input faces replaced by random ones
(so that a rollout recovers from an early mistake rather than compounding it).

Needs torch (``pip install 'beggar-env[rl]'``).
"""

import math

import numpy as np

from .. import checks

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.stream_model", "a CPU-only torch build")
nn = torch.nn
F = torch.nn.functional

from . import face_streams as fs  # noqa: E402 (after torch's check)


class StreamNet(nn.Module):
    """The causal transformer over face-stream tokens (see the module's docstring).

    Parameters
    ----------
    n_players : the player count of its games.
    width : the model's width.
    layers : transformer blocks.
    heads : attention heads per block.
    window : tokens back each token attends to (itself included).
    shift : the tokens before each whose embeddings are mixed into its own (a causal
        convolution over the inputs, as H3's shift and "canon" layers: a token then holds
        the one before it, which attention alone, with a bias that only falls with distance,
        finds hard to single out); 0: none.
    """

    def __init__(self, n_players=2, width=128, layers=3, heads=4, window=256, shift=0):
        super().__init__()
        self.n_players, self.window, self.heads = n_players, window, heads
        self.settings = dict(n_players=n_players, width=width, layers=layers, heads=heads, window=window, shift=shift)
        self.shift = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(shift))
        self.kind = nn.Embedding(fs.n_kinds(n_players), width)
        self.face = nn.Embedding(fs.NO_FACE + 1, width)
        self.size = nn.Embedding(fs.NO_SIZE + 1, width)
        self.under = nn.Linear(width, width, bias=False)  # of the face embedding: one table for every face
        self.face_out = nn.Linear(width, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.kind_head = nn.Linear(width, fs.n_kinds(n_players) - 1)  # never BOS
        self.face_bias = nn.Parameter(torch.zeros(fs.NO_FACE))
        self.own_out = nn.Linear(width, width)
        self.size_head = nn.Linear(width, fs.N_SIZES)
        self.apply(_small_init)
        slopes = [2.0 ** (-1 - 2 * h) for h in range(heads - 1)] + [0.0]
        self.register_buffer("slopes", torch.tensor(slopes).view(heads, 1, 1), persistent=False)

    def bias(self, n, device=None):
        """The attention bias of ``n`` tokens: ``-slope * distance`` within the causal window, -inf elsewhere."""
        i = torch.arange(n, device=device)
        distance = (i.view(-1, 1) - i.view(1, -1)).float()
        inside = (distance >= 0) & (distance < self.window)
        return torch.where(inside, -self.slopes * distance, torch.tensor(-math.inf))

    def shifted(self, e):
        """Each token's embedding plus the mixed embeddings of the ``shift`` tokens before it (``(b, n, width)``)."""
        x = e
        for back, mix in enumerate(self.shift, start=1):
            x = x + F.pad(mix(e), (0, 0, back, 0))[:, : e.shape[1]]
        return x

    def forward(self, kind, face, size, under):
        """Logits of the next token's kind, face and size at every position of ``(batch, n)``
        tokens, and, at a play, of the face its seat plays next (an auxiliary target: at the
        play of a card, its successor in the hand is the card that followed it when last
        played, one lookup; the next token's face is then read from the seat's last play)."""
        x = self.shifted(self.embed(kind, face, size, under))
        bias = self.bias(kind.shape[1], kind.device)
        for block in self.blocks:
            x = block(x, bias)
        x = self.norm(x)
        own = self.own_out(x) @ self.face.weight[: fs.NO_FACE].T + self.face_bias
        return (*self.read_out(x), own)

    def embed(self, kind, face, size, under):
        """A token's input: its kind, face and size, and the face beneath it seen through the
        face embedding (so that "the card played on c" and "c" are one vector apart)."""
        return self.kind(kind) + self.face(face) + self.size(size) + self.under(self.face(under))

    def read_out(self, x):
        """The logits of the next kind, face (read against the face embedding, tied, so that
        copying a face is the same act for every face) and size."""
        faces = self.face_out(x) @ self.face.weight[: fs.NO_FACE].T + self.face_bias
        return self.kind_head(x), faces, self.size_head(x)


def _small_init(module):
    """GPT-2's initialisation: weights N(0, 0.02), biases 0. With torch's defaults (embeddings
    N(0, 1)) even a one-step copy (read the token whose "beneath" is my face) stayed at
    chance for 3,000 steps; with these it is exact within 500 (see docs/results.md)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class Block(nn.Module):
    """A pre-norm transformer block: attention with a given bias, then a 4x MLP."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x, bias):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + self.out(attended.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


# ------------------------------------------------------------------------- training


def window_batch(games, n_players, batch, length, rng, corrupt=0.0, by_length=False):
    """``batch`` windows of ``length + 1`` tokens cut at random from ``games`` (face_streams'
    ``(kind, face, size, offsets)``; a game shorter than the window is padded after its end
    with masked tokens), as torch tensors: inputs ``(kind, face, size)``, targets, and the
    masks of the face and size losses. ``corrupt``: the share of input faces replaced by a
    random face. ``by_length``: each window's game drawn in proportion to its length (so
    each token about equally often), not uniformly."""
    kind, face, size, offsets = games
    lengths = np.diff(offsets)
    if by_length:
        g = rng.choice(len(lengths), batch, p=lengths / lengths.sum())
    else:
        g = rng.integers(0, len(lengths), batch)
    span = np.maximum(lengths[g] - length - 1, 0)
    start = offsets[g] + (rng.random(batch) * (span + 1)).astype(np.int64)
    stop = np.minimum(start + length + 1, offsets[g + 1])
    k = np.full((batch, length + 1), -1, np.int64)
    f = np.full((batch, length + 1), fs.NO_FACE, np.int64)
    z = np.full((batch, length + 1), fs.NO_SIZE, np.int64)
    for row in range(batch):
        n = stop[row] - start[row]
        cut = slice(start[row], stop[row])
        k[row, :n], f[row, :n], z[row, :n] = kind[cut], face[cut], size[cut]
    valid = k >= 0
    windows = np.arange(batch + 1, dtype=np.int64) * (length + 1)
    first = fs.first_appearances(np.where(valid, f, fs.NO_FACE).reshape(-1).astype(np.int8), windows)
    first = first.reshape(batch, length + 1).astype(bool)
    plays = valid & (k < n_players)
    face_mask = plays & ~first
    size_mask = valid & (k >= n_players) & (k < 2 * n_players)
    inputs_kind = np.where(valid[:, :-1], k[:, :-1], fs.bos(n_players))
    inputs_face = f[:, :-1].copy()
    if corrupt > 0:
        hit = (rng.random(inputs_face.shape) < corrupt) & (inputs_face < fs.NO_FACE)
        inputs_face[hit] = rng.integers(0, fs.NO_FACE, hit.sum())
    under = fs.under(inputs_kind, inputs_face, n_players)
    before = np.maximum(start - 1, 0)  # the first token's card beneath, from the stream before the window
    under[:, 0] = np.where(
        (start > offsets[g]) & (kind[start] < n_players) & (kind[before] < n_players), face[before], fs.NO_FACE
    )
    own = fs.next_own_plays(k, n_players)[:, :-1]
    rows = np.arange(batch)[:, None]
    own_ok = (own >= 0) & ~first[rows, np.maximum(own, 0)]
    t = torch.from_numpy
    return dict(
        kind=t(inputs_kind),
        face=t(inputs_face),
        size=t(z[:, :-1]),
        under=t(under),
        next_kind=t(np.where(valid[:, 1:], k[:, 1:], -100)),
        next_face=t(np.where(face_mask[:, 1:], f[:, 1:], -100)),
        next_size=t(np.where(size_mask[:, 1:], z[:, 1:], -100)),
        own_face=t(np.where(own_ok, f[rows, np.maximum(own, 0)], -100)),
    )


TARGETS = ("next_kind", "next_face", "next_size", "own_face")


def loss(model, batch, targets=TARGETS):
    """The summed cross-entropies of the next token's kind, face (copyable plays) and size
    (takes), and of the face each play's seat plays next (copyable); ``targets``: those of
    :data:`TARGETS` counted.

    Trained on all four from the start, the copy never began (face accuracy at chance
    after 2,000 steps of a small model); on ``("own_face",)`` alone it is learned within
    400 steps, after which the other targets join and the next token's face follows within
    400 more: hence the study's first stage (``--own-first``)."""
    logits = model(batch["kind"], batch["face"], batch["size"], batch["under"])
    return sum(
        F.cross_entropy(x.flatten(0, 1), batch[name].flatten(), ignore_index=-100)
        for x, name in zip(logits, TARGETS, strict=True)
        if name in targets
    )


@torch.no_grad()
def accuracies(model, batch):
    """Teacher-forced exact-match rates of the next kind, copyable face and size on a batch."""
    out = {}
    logits_of = model(batch["kind"], batch["face"], batch["size"], batch["under"])
    for name, logits, target in zip(
        ("kind", "face", "size", "own"), logits_of, (batch[n] for n in TARGETS), strict=True
    ):
        keep = target >= 0
        out[name] = float((logits.argmax(-1)[keep] == target[keep]).float().mean())
    return out


# ------------------------------------------------------------------------- rollouts


@torch.no_grad()
def roll_out(model, kind, face, size, lengths, max_tokens, generator=None, unseen=None):
    """Continue ``B`` streams with the network alone, each until it writes ``END`` or for
    ``max_tokens`` tokens: greedily (``generator`` None) or sampling each token from the
    network's probabilities (with that ``torch.Generator``).

    ``kind``, ``face``, ``size``: int arrays ``(B, n)``, stream ``b`` in its first
    ``lengths[b]`` tokens (from its game's ``BOS`` or any later token; only its last
    ``model.window`` tokens are read). ``unseen``: None, or per stream, per seat, the faces
    of the cards that seat was dealt and has not played yet, in the order it will play them
    (a completion of the unseen cards, as the Bayes forecaster draws them): the face of each
    play the network writes for that seat is taken from there while any is left (a card's
    first appearance cannot be copied; the network was never trained to write one). Returns
    ``(kind, face, size)`` of the tokens written, ``(B, max_tokens)`` each, ``-1`` after a
    stream's ``END``.
    """
    model.eval()
    n_players, window = model.n_players, model.window
    b = len(lengths)
    queues = _queues(unseen, b, n_players)
    kind_t, face_t, size_t, under_t, valid = _last_window(kind, face, size, lengths, window, n_players)
    caches = _prefill(model, kind_t, face_t, size_t, under_t, valid)
    last = _head_logits(model, caches["x"])
    out = np.full((3, b, max_tokens), -1, np.int64)
    rows = np.arange(b)  # the streams still being written, in the caches' order
    previous_face = np.where(kind_t[:, -1].numpy() < n_players, face_t[:, -1].numpy(), fs.NO_FACE)
    for t in range(max_tokens):
        k, f, z = (_choose(logits, generator) for logits in last)
        plays, takes = k < n_players, (k >= n_players) & (k < 2 * n_players)
        for i in np.flatnonzero(plays) if queues is not None else ():
            dealt = queues[rows[i]][k[i]]
            if dealt:
                f[i] = dealt.pop()
        f = np.where(plays, f, fs.NO_FACE)
        z = np.where(takes, z, fs.NO_SIZE)
        out[:, rows, t] = np.stack([k, f, z])
        going = k < 2 * n_players
        if not going.any():
            break
        if not going.all():  # drop the streams that ended from the batch
            keep = torch.from_numpy(np.flatnonzero(going))
            rows, k, f, z, plays, previous_face = (a[going] for a in (rows, k, f, z, plays, previous_face))
            _keep_rows(caches, keep)
        under = np.where(plays & (previous_face < fs.NO_FACE), previous_face, fs.NO_FACE)
        previous_face = f
        x = _embed(model, k, f, z, under, caches)
        last = _head_logits(model, _step(model, caches, x))
    return out[0], out[1], out[2]


def _queues(unseen, b, n_players):
    """``unseen`` as lists to pop from (last first), checked against the batch."""
    if unseen is None:
        return None
    if len(unseen) != b or any(len(seats) != n_players for seats in unseen):
        raise ValueError(f"unseen: one list of {n_players} seats' faces per stream ({b} streams) is needed")
    return [[[int(x) for x in reversed(faces)] for faces in seats] for seats in unseen]


def _keep_rows(caches, keep):
    caches["valid"] = caches["valid"][keep]
    caches["embedded"] = caches["embedded"][keep]
    caches["keys"] = [k[keep] for k in caches["keys"]]
    caches["values"] = [v[keep] for v in caches["values"]]


def _choose(logits, generator):
    if generator is None:
        return logits.argmax(-1).numpy()
    return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator).squeeze(-1).numpy()


def _last_window(kind, face, size, lengths, window, n_players):
    """The last ``window`` tokens of each stream, right-aligned, with what lies beneath each
    play and which slots hold a token."""
    b = len(lengths)
    k = np.full((b, window), fs.bos(n_players), np.int64)
    f = np.full((b, window), fs.NO_FACE, np.int64)
    z = np.full((b, window), fs.NO_SIZE, np.int64)
    under = np.full((b, window), fs.NO_FACE, np.int64)
    valid = np.zeros((b, window), bool)
    for row, n in enumerate(lengths):
        m = min(n, window)
        k[row, -m:], f[row, -m:], z[row, -m:] = kind[row, n - m : n], face[row, n - m : n], size[row, n - m : n]
        cut = max(n - m - 1, 0)
        u = fs.under(kind[row, cut:n], face[row, cut:n], n_players)
        under[row, -m:] = u[-m:]
        valid[row, -m:] = True
    t = torch.from_numpy
    return t(k), t(f), t(z), t(under), t(valid)


def _embed(model, k, f, z, under, caches=None):
    """A new token's input (``(b, 1, width)``); with ``caches``, mixed with the embeddings
    of the tokens before it, which the cache then keeps."""
    t = torch.from_numpy
    e = model.embed(t(k), t(f), t(z), t(under)).unsqueeze(1)
    if caches is None or not len(model.shift):
        return e
    x = e
    for back, mix in enumerate(model.shift, start=1):
        x = x + mix(caches["embedded"][:, -back:][:, :1])
    caches["embedded"] = torch.cat([caches["embedded"][:, 1:], e], 1)
    return x


def _head_logits(model, x):
    x = model.norm(x[:, -1])
    return model.read_out(x)


def _prefill(model, kind, face, size, under, valid):
    """Run the right-aligned windows through the network, keeping each block's keys and values."""
    e = model.embed(kind, face, size, under) * valid[..., None]
    x = model.shifted(e)
    n = kind.shape[1]
    bias = model.bias(n).unsqueeze(0) + torch.where(valid, 0.0, -math.inf).view(-1, 1, 1, n)
    bias = torch.where(torch.isinf(bias).all(-1, keepdim=True), 0.0, bias)  # padded rows: anything finite
    caches = {"x": x, "keys": [], "values": [], "valid": valid, "embedded": e[:, -max(1, len(model.shift)) :]}
    for block in model.blocks:
        h = block.norm1(x)
        b, _, d = h.shape
        q, k, v = block.qkv(h).view(b, n, 3, block.heads, d // block.heads).permute(2, 0, 3, 1, 4)
        caches["keys"].append(k)
        caches["values"].append(v)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        x = x + block.out(attended.transpose(1, 2).reshape(b, n, d))
        x = x + block.mlp(block.norm2(x))
    caches["x"] = x
    return caches


def _step(model, caches, x):
    """One new token through the network against the cached window; the cache slides by one."""
    valid = torch.cat([caches["valid"][:, 1:], torch.ones(len(x), 1, dtype=torch.bool)], 1)
    caches["valid"] = valid
    w = valid.shape[1]
    distance = torch.arange(w - 1, -1, -1, dtype=torch.float32)
    bias = (-model.slopes * distance.view(1, 1, w)).unsqueeze(0) + torch.where(valid, 0.0, -math.inf).view(-1, 1, 1, w)
    for i, block in enumerate(model.blocks):
        h = block.norm1(x)
        b, _, d = h.shape
        q, k, v = block.qkv(h).view(b, 1, 3, block.heads, d // block.heads).permute(2, 0, 3, 1, 4)
        keys = torch.cat([caches["keys"][i][:, :, 1:], k], 2)
        values = torch.cat([caches["values"][i][:, :, 1:], v], 2)
        caches["keys"][i], caches["values"][i] = keys, values
        attended = F.scaled_dot_product_attention(q, keys, values, attn_mask=bias)
        x = x + block.out(attended.transpose(1, 2).reshape(b, 1, d))
        x = x + block.mlp(block.norm2(x))
    return x
