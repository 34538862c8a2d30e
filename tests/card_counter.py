"""An independent card-counter for testing ``observation="counted"``: it sees only the
public history (each card as it is turned, and who takes each pile) and the deck's
composition, never a hand, and keeps what it can know of every hand. No beggar_env code."""

from collections import deque

UNKNOWN = -2  # a card dealt to a hand and not yet seen
EMPTY = -1
SLOTS = 52


class CardCounter:
    def __init__(self, hand_sizes, composition):
        """``composition[c]``: how many cards of class c the deck holds (0 numeral .. 4 ace)."""
        self.hands = [deque([UNKNOWN] * size) for size in hand_sizes]
        self.unseen = list(composition)
        self.pile = []

    def see(self, event):
        """One public event: ("play", seat, class) or ("take", seat)."""
        if event[0] == "play":
            _, seat, card = event
            top = self.hands[seat].popleft()
            if top == UNKNOWN:
                self.unseen[card] -= 1
            else:
                assert top == card, "a card the counter knew turned out different"
            self.pile.append(card)
        else:
            self.hands[event[1]].extend(self.pile)
            self.pile.clear()

    def known(self):
        return [list(hand) + [EMPTY] * (SLOTS - len(hand)) for hand in self.hands]
