/* A plain C census of every deal of a small deck, written from docs/RULES.md alone: the
 * speed reference of the project's census (benchmarks/suite/census.py).
 *
 *     census DECK PLAYERS FIRST COUNT
 *
 * plays deals FIRST .. FIRST + COUNT - 1 of DECK (compact symbols: - J Q K A) in census
 * order (lexicographic over the classes numeral < J < Q < K < A; each deal dealt as a game
 * is: hand after hand, as even as possible, the first seats one more card, seat 0 leading)
 * and prints one line:
 *
 *     games ended longest_cards longest_tricks longest_index cpu_seconds
 *
 * The first deal is unranked from its index; each next one is the next permutation of the
 * multiset. Each hand is a ring buffer; nothing is allocated per deal. A game is played
 * without checks for its first 1,024 tricks, then its trick-start positions (hands and
 * leader) are compared by Brent's algorithm: a repeat means it never ends. The longest
 * game is the first (lowest index) of the most cards among the games that end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXP 4
#define MAXN 64
#define CAP 64 /* ring buffer length: a power of two, at least the deck */
#define MASK (CAP - 1)
#define PLAIN_TRICKS 1024

typedef struct {
    uint8_t hand[MAXP][CAP];
    unsigned head[MAXP];
    int held[MAXP];
    int lead;
} position;

typedef struct {
    position q;
    int alive[MAXP], n_alive, np, n;
    long cards, tricks;
    uint8_t pile[MAXN];
} game;

static int next_in(const game *g, int seat) {
    do {
        seat = seat + 1 == g->np ? 0 : seat + 1;
    } while (!g->alive[seat]);
    return seat;
}

static void take(game *g, int taker, int len) {
    position *q = &g->q;
    unsigned end = q->head[taker] + (unsigned)q->held[taker];
    for (int k = 0; k < len; k++) q->hand[taker][(end + k) & MASK] = g->pile[k];
    q->held[taker] += len;
    q->lead = taker;
    g->tricks++;
}

/* One trick from the position; 1 when the game is over (a hand holds every card). */
static int trick(game *g) {
    position *q = &g->q;
    int turn = q->lead, owed = 0, court = -1, len = 0;
    for (;;) {
        if (q->held[turn] == 0) { /* must play and cannot: out */
            g->alive[turn] = 0;
            int nxt = next_in(g, turn);
            if (--g->n_alive == 1) {
                take(g, nxt, len);
                return 1;
            }
            turn = nxt;
            continue;
        }
        uint8_t card = q->hand[turn][q->head[turn]];
        q->head[turn] = (q->head[turn] + 1) & MASK;
        q->held[turn]--;
        g->pile[len++] = card;
        g->cards++;
        if (card) {
            owed = card;
            court = turn;
            turn = next_in(g, turn);
        } else if (owed) {
            if (--owed == 0) {
                take(g, court, len);
                return q->held[court] == g->n;
            }
        } else {
            turn = next_in(g, turn);
        }
    }
}

static int same(const position *a, const position *b, int np) {
    if (a->lead != b->lead) return 0;
    for (int p = 0; p < np; p++)
        if (a->held[p] != b->held[p]) return 0;
    for (int p = 0; p < np; p++)
        for (int k = 0; k < a->held[p]; k++)
            if (a->hand[p][(a->head[p] + k) & MASK] != b->hand[p][(b->head[p] + k) & MASK]) return 0;
    return 1;
}

/* Play a dealt game to its end (1) or its first repeated position (0). */
static int play(game *g) {
    while (g->tricks < PLAIN_TRICKS)
        if (trick(g)) return 1;
    position saved = g->q;
    long power = 1, lam = 0;
    for (;;) {
        if (trick(g)) return 1;
        lam++;
        if (same(&g->q, &saved, g->np)) return 0;
        if (lam == power) {
            saved = g->q;
            power *= 2;
            lam = 0;
        }
    }
}

static void deal(game *g, const uint8_t *cards, const int *sizes) {
    int at = 0;
    for (int p = 0; p < g->np; p++) {
        memcpy(g->q.hand[p], cards + at, (size_t)sizes[p]);
        at += sizes[p];
        g->q.head[p] = 0;
        g->q.held[p] = sizes[p];
        g->alive[p] = 1;
    }
    g->q.lead = 0;
    g->n_alive = g->np;
    g->cards = g->tricks = 0;
}

/* cards[0..n) to the next arrangement in lexicographic order; 0 at the last. */
static int next_permutation(uint8_t *a, int n) {
    int k = n - 2;
    while (k >= 0 && a[k] >= a[k + 1]) k--;
    if (k < 0) return 0;
    int j = n - 1;
    while (a[j] <= a[k]) j--;
    uint8_t t = a[k];
    a[k] = a[j];
    a[j] = t;
    for (int lo = k + 1, hi = n - 1; lo < hi; lo++, hi--) {
        t = a[lo];
        a[lo] = a[hi];
        a[hi] = t;
    }
    return 1;
}

/* Arrangement `index` of the deck with left[c] cards of class c, lexicographic. */
static int unrank(uint64_t index, uint64_t *left, int n, uint8_t *out) {
    uint64_t ways = 1;
    int total = 0;
    for (int c = 0; c < 5; c++)
        for (uint64_t k = 1; k <= left[c]; k++) ways = ways * (uint64_t)++total / k;
    if (index >= ways) return 0;
    for (int j = 0; j < n; j++)
        for (int c = 0; c < 5; c++) {
            if (!left[c]) continue;
            uint64_t with_c = ways * left[c] / (uint64_t)(n - j);
            if (index < with_c) {
                out[j] = (uint8_t)c;
                left[c]--;
                ways = with_c;
                break;
            }
            index -= with_c;
        }
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: census DECK PLAYERS FIRST COUNT\n");
        return 2;
    }
    const char *symbols = "-JQKA";
    uint64_t left[5] = {0};
    int n = (int)strlen(argv[1]);
    for (int k = 0; k < n; k++) {
        const char *at = strchr(symbols, argv[1][k]);
        if (!at || !*at || n > MAXN) {
            fprintf(stderr, "census: DECK: compact symbols - J Q K A, at most %d\n", MAXN);
            return 2;
        }
        left[at - symbols]++;
    }
    game g;
    memset(&g, 0, sizeof g);
    g.np = atoi(argv[2]);
    g.n = n;
    uint64_t first = strtoull(argv[3], 0, 10), count = strtoull(argv[4], 0, 10);
    if (g.np < 2 || g.np > MAXP || n < g.np) {
        fprintf(stderr, "census: PLAYERS: 2 to %d, at most the deck's cards\n", MAXP);
        return 2;
    }
    int sizes[MAXP];
    for (int p = 0; p < g.np; p++) sizes[p] = n / g.np + (p < n % g.np);
    uint8_t cards[MAXN];
    if (!unrank(first, left, n, cards)) {
        fprintf(stderr, "census: FIRST is past the deck's deals\n");
        return 2;
    }
    clock_t began = clock();
    uint64_t games = 0, ended = 0, longest_index = (uint64_t)-1;
    long longest_cards = 0, longest_tricks = 0;
    for (uint64_t i = 0; i < count; i++) {
        deal(&g, cards, sizes);
        games++;
        if (play(&g)) {
            ended++;
            if (g.cards > longest_cards) {
                longest_cards = g.cards;
                longest_tricks = g.tricks;
                longest_index = first + i;
            }
        }
        if (!next_permutation(cards, n)) break;
    }
    double seconds = (double)(clock() - began) / CLOCKS_PER_SEC;
    printf("%llu %llu %ld %ld %lld %.6f\n", (unsigned long long)games, (unsigned long long)ended, longest_cards,
           longest_tricks, longest_index == (uint64_t)-1 ? -1LL : (long long)longest_index, seconds);
    return 0;
}
