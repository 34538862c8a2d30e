"""A plain, independent pure-Python implementation of RULES.md, for testing the engine.

It shares no code with ``beggar_env`` and is written to be read: one card at a time,
hands as deques (leftmost = top of the hand), the pile as a list in play order, and an
exact dict of every trick-start position seen so far for cycle detection. It is also the
pure-Python baseline of the benchmarks, so it avoids needless work, but clarity comes
first. No numpy.

Card classes: 0 numeral, 1 J, 2 Q, 3 K, 4 A; a court card's class is its honour (the
number of cards the next player must pay).

Conventions where RULES.md is open (the same as the engine's):

* A player who must play (lead, continue or pay) with an empty hand is eliminated at that
  moment. If only one player is left, it takes the pile (a trick) and wins. Otherwise the
  next active seat owes whatever was still owed to the same court player (or, with
  nothing owed, simply plays next).
* After a taking, if the taker holds every card, the game is won.
* If at the very start exactly one seat holds cards, it has won: 0 cards, 0 tricks.
* A trick-start position is (every hand as a sequence of classes, the seat that leads).
  The game is a "cycle" at the first trick-start position equal to an earlier one.
* The agreed limit: after each card and all its consequences (taking, eliminations,
  win, cycle check), if the game goes on and cards >= max_cards or tricks >= max_tricks,
  it stops ("limit"): the seat with strictly the most cards in hand wins, a tie is a
  draw (winner None). A limit of 0 stops the game before the first card.
"""

from collections import deque

__all__ = ["play_reference"]

NUMERAL = 0
HONOUR_OF_CLASS = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}  # J pays 1, Q 2, K 3, A 4


def _result(outcome, winner, cards, tricks, hands, cycle=None):
    start_cards = start_tricks = period_cards = period_tricks = None
    if cycle is not None:
        start_cards, start_tricks = cycle
        period_cards = cards - start_cards
        period_tricks = tricks - start_tricks
    return {
        "outcome": outcome,
        "winner": winner,
        "cards": cards,
        "tricks": tricks,
        "hand_sizes": tuple(len(hand) for hand in hands),
        "cycle_start_cards": start_cards,
        "cycle_start_tricks": start_tricks,
        "cycle_cards": period_cards,
        "cycle_tricks": period_tricks,
    }


def _most_cards(hands):
    """The seat with strictly the most cards in hand, or None for a tie."""
    sizes = [len(hand) for hand in hands]
    best = max(sizes)
    leaders = [seat for seat, size in enumerate(sizes) if size == best]
    return leaders[0] if len(leaders) == 1 else None


def _check_limit(name, value):
    if value is None:
        return float("inf")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be None or an int")
    if value < 0:
        raise ValueError(f"{name} must be >= 0")
    return value


def play_reference(hands, max_cards=None, max_tricks=None, events=None):
    """Play one deal given as a list of hands, each a list of classes (top card first).

    Returns a dict: outcome ("win", "cycle" or "limit"), winner (seat or None), cards,
    tricks, hand_sizes (a tuple, at the end; for a cycle, at the first repeat) and the
    cycle figures cycle_start_cards, cycle_start_tricks, cycle_cards, cycle_tricks (None
    unless the outcome is "cycle").

    ``events``, if a list, receives the public history as it happens: ("play", seat,
    class) for every card turned, ("take", seat) for every pile taken.
    """
    log = events.append if events is not None else lambda event: None
    n_players = len(hands)
    if not 2 <= n_players <= 4:
        raise ValueError("a deal needs 2 to 4 players")
    hands = [deque(int(card) for card in hand) for hand in hands]
    for hand in hands:
        for card in hand:
            if card not in HONOUR_OF_CLASS:
                raise ValueError(f"unknown card class {card}")
    n_cards = sum(len(hand) for hand in hands)
    if n_cards == 0:
        raise ValueError("a deal needs at least one card")
    card_limit = _check_limit("max_cards", max_cards)
    trick_limit = _check_limit("max_tricks", max_tricks)

    holders = [seat for seat in range(n_players) if hands[seat]]
    if len(holders) == 1:  # one seat already holds every card
        return _result("win", holders[0], 0, 0, hands)

    alive = [True] * n_players
    pile = []
    cards = 0  # cards played onto the pile
    tricks = 0  # piles taken
    turn = 0  # the seat that plays the next card
    owed = 0  # cards still owed to `court` (0: nothing owed)
    court = None  # the seat that laid the last court card of this trick

    def next_active(seat):
        seat = (seat + 1) % n_players
        while not alive[seat]:
            seat = (seat + 1) % n_players
        return seat

    def position(leader):
        return (leader,) + tuple(bytes(hand) for hand in hands)

    # At the very start seat 0 may have to lead from an empty hand: it is out, and the
    # next seat leads (at least two seats hold cards, so nobody has won yet).
    while not hands[turn]:
        alive[turn] = False
        turn = next_active(turn)
    seen = {position(turn): (0, 0)}  # trick-start position -> (cards, tricks) when first seen
    if cards >= card_limit or tricks >= trick_limit:
        return _result("limit", _most_cards(hands), cards, tricks, hands)

    while True:
        # Rule 1: the player to move turns the top card of their hand onto the pile.
        card = hands[turn].popleft()
        pile.append(card)
        cards += 1
        log(("play", turn, card))

        if card != NUMERAL:
            # Rules 3 and 4: a court card; the next player must pay its honour.
            owed = HONOUR_OF_CLASS[card]
            court = turn
            turn = next_active(turn)
        elif owed > 0:
            # A numeral paid towards a court card.
            owed -= 1
            if owed == 0:
                # Rule 5: paid in full; the court player takes the pile under its hand,
                # in play order, and leads the next trick.
                hands[court].extend(pile)
                pile.clear()
                tricks += 1
                log(("take", court))
                turn = court
                court = None
                if len(hands[turn]) == n_cards:  # rule 8: it holds every card
                    return _result("win", turn, cards, tricks, hands)
                key = position(turn)
                if key in seen:  # the first repeated trick-start position
                    return _result("cycle", None, cards, tricks, hands, cycle=seen[key])
                seen[key] = (cards, tricks)
        else:
            # Rule 2: a numeral with nothing owed; the turn passes on.
            turn = next_active(turn)

        # Rule 7: whoever must play next with an empty hand is out.
        while not hands[turn]:
            alive[turn] = False
            still_in = [seat for seat in range(n_players) if alive[seat]]
            if len(still_in) == 1:
                winner = still_in[0]
                hands[winner].extend(pile)
                pile.clear()
                tricks += 1
                log(("take", winner))
                return _result("win", winner, cards, tricks, hands)
            turn = next_active(turn)  # it owes what was owed, to the same court player

        # The agreed limit.
        if cards >= card_limit or tricks >= trick_limit:
            return _result("limit", _most_cards(hands), cards, tricks, hands)
