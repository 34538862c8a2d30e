"""The networks of the sequence forecasters (:mod:`~beggar_env.forecasting.sequence_models`):
a GRU and a small causal transformer over the stream of a game's observations
(:mod:`~beggar_env.forecasting.events`), each with a state carried from window to window
of training and from step to step in the env, reset where a game starts.

Needs torch (``pip install 'beggar-env[rl]'``).
"""

from .. import checks

torch = checks.import_extra("torch", "rl", "beggar_env.forecasting.sequence_nets", "a CPU-only torch build")

nn = torch.nn
functional = torch.nn.functional


class GRUNet(nn.Module):
    """Events -> a linear layer -> ReLU -> a GRU cell -> logits of the outcomes. The state
    is the GRU's hidden vector, zeroed where a game starts."""

    def __init__(self, width, n_outcomes, hidden=128):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Linear(width, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, n_outcomes)

    def initial(self, batch):
        return torch.zeros(batch, self.hidden)

    def forward(self, x, start, state):
        """``x`` (batch, steps, width), ``start`` (batch, steps) bool; returns logits
        (batch, steps, n_outcomes) and the state after the last step."""
        inputs = functional.relu(self.embed(x))
        keep = (~start).to(x.dtype)
        h, outs = state, []
        for t in range(x.shape[1]):
            h = self.cell(inputs[:, t], h * keep[:, t, None])
            outs.append(h)
        return self.head(torch.stack(outs, dim=1)), h

    @staticmethod
    def detach(state):
        return state.detach()

    def initial_step(self, batch):
        return self.initial(batch)

    def step(self, x, start, state):
        """One step ``x`` (batch, 1, width) at a time, as ``forward`` plays it."""
        return self.forward(x, start, state)

    @staticmethod
    def lanes(state):
        return state.shape[0]


class CausalTransformer(nn.Module):
    """A pre-norm transformer whose step attends to the last ``context`` steps of its own
    game (itself included), layer by layer, as Transformer-XL does: the state is each layer's
    inputs at the last ``context - 1`` steps (and which game each belongs to), so a window
    of steps and one step at a time in the env compute the same forecasts. No positional
    embedding: attention is causal, and the events carry the time (cards, tricks).

    Parameters
    ----------
    width : the width of a step's events.
    n_outcomes : the outcomes forecast.
    d_model : the width of the model.
    heads : the attention heads (a divisor of ``d_model``).
    layers : the blocks.
    context : the steps of its game a step attends to, itself included.
    """

    def __init__(self, width, n_outcomes, d_model=64, heads=4, layers=2, context=128):
        super().__init__()
        self.d_model, self.heads, self.context = d_model, heads, context
        self.embed = nn.Linear(width, d_model)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(
                {
                    "norm1": nn.LayerNorm(d_model),
                    "qkv": nn.Linear(d_model, 3 * d_model),
                    "out": nn.Linear(d_model, d_model),
                    "norm2": nn.LayerNorm(d_model),
                    "mlp": nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)),
                }
            )
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_outcomes)

    def initial(self, batch):
        m = self.context - 1
        memory = [torch.zeros(batch, m, self.d_model) for _ in self.blocks]
        game = torch.full((batch, m), -1, dtype=torch.long)  # -1: an empty slot, in no game
        return memory, game, torch.zeros(batch, dtype=torch.long)

    def forward(self, x, start, state):
        memory, mem_game, current = state
        batch, steps, _ = x.shape
        m = mem_game.shape[1]
        game = current[:, None] + torch.cumsum(start.long(), dim=1)  # each step's game number, per lane
        keys_game = torch.cat([mem_game, game], dim=1)
        distance = (torch.arange(steps)[:, None] + m) - torch.arange(m + steps)[None, :]
        in_reach = (distance >= 0) & (distance < self.context)
        mask = in_reach[None] & (keys_game[:, None, :] == game[:, :, None])  # (batch, steps, m + steps)
        h = self.embed(x)
        new_memory = []
        for block, mem in zip(self.blocks, memory):
            both = torch.cat([mem, h], dim=1)
            new_memory.append(both[:, -m:] if m else both[:, :0])
            q, k, v = block["qkv"](block["norm1"](both)).split(self.d_model, dim=2)
            q = q[:, m:]
            shape = (batch, -1, self.heads, self.d_model // self.heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            attended = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
            h = h + block["out"](attended.transpose(1, 2).reshape(batch, steps, self.d_model))
            h = h + block["mlp"](block["norm2"](h))
        logits = self.head(self.norm(h))
        new_game = keys_game[:, -m:] if m else keys_game[:, :0]
        return logits, (new_memory, new_game, game[:, -1])

    @staticmethod
    def detach(state):
        memory, game, current = state
        return [mem.detach() for mem in memory], game, current

    def initial_step(self, batch):
        """The state of ``step``: each layer's keys and values of the last ``context``
        steps in a ring (attention has no positions, so their order does not matter), the
        game of each slot (-1: empty), the next slot, and each lane's game number."""
        shape = (batch, self.heads, self.context, self.d_model // self.heads)
        keys = [(torch.zeros(shape), torch.zeros(shape)) for _ in self.blocks]
        game = torch.full((batch, self.context), -1, dtype=torch.long)
        return keys, game, 0, torch.zeros(batch, dtype=torch.long)

    def step(self, x, start, state):
        """One step ``x`` (batch, 1, width) for every lane, the forecasts ``forward`` gives
        for that step: each layer computes the new step's query, key and value only and
        attends to the cached keys of its game, so a step costs O(context), not
        O(context²)."""
        keys, slot_game, slot, current = state
        batch = x.shape[0]
        game = current + start[:, 0].long()
        slot_game[:, slot] = game
        mask = (slot_game == game[:, None])[:, None, None, :]  # (batch, 1, 1, context)
        h = self.embed(x)
        for block, (k_cache, v_cache) in zip(self.blocks, keys):
            q, k, v = block["qkv"](block["norm1"](h)).split(self.d_model, dim=2)
            shape = (batch, 1, self.heads, self.d_model // self.heads)
            q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
            k_cache[:, :, slot], v_cache[:, :, slot] = k[:, :, 0], v[:, :, 0]
            attended = functional.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask)
            h = h + block["out"](attended.transpose(1, 2).reshape(batch, 1, self.d_model))
            h = h + block["mlp"](block["norm2"](h))
        return self.head(self.norm(h)), (keys, slot_game, (slot + 1) % self.context, game)

    @staticmethod
    def lanes(state):
        return state[-1].shape[0]
