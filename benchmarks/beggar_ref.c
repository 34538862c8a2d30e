/* A small, independent C implementation of RULES.md, used by benchmarks/bench.py as the
 * speed reference. It plays explicit deals (card classes 0 numeral, 1..4 J Q K A),
 * detects cycles with Brent's algorithm over trick-start positions like the engine, and
 * reports for each game: outcome (1 win, 2 cycle), winner, cards, tricks.
 * Built as a shared library and called through ctypes; OpenMP is optional. */
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define MAXP 4
#define CAP 64 /* ring buffer length: decks of at most 64 cards */
#define MASK (CAP - 1)

typedef struct {
    int8_t hand[MAXP][CAP];
    int head[MAXP], held[MAXP];
    int lead;
} position;

typedef struct {
    position pos;
    int8_t pile[CAP];
    int alive[MAXP], n_alive, n_players, n_cards;
    long cards, tricks;
    int winner; /* -1 while running */
} game;

static int next_alive(const game *g, int seat) {
    do { seat = (seat + 1) % g->n_players; } while (!g->alive[seat]);
    return seat;
}

static void take(game *g, int taker, int pile_len) {
    position *q = &g->pos;
    int end = q->head[taker] + q->held[taker];
    for (int k = 0; k < pile_len; k++) q->hand[taker][(end + k) & MASK] = g->pile[k];
    q->held[taker] += pile_len;
    g->tricks++;
    q->lead = taker;
    if (q->held[taker] == g->n_cards) g->winner = taker;
}

/* Play one trick from the current position. */
static void trick(game *g) {
    position *q = &g->pos;
    int turn = q->lead, owed = 0, court = -1, pile_len = 0;
    for (;;) {
        while (q->held[turn] == 0) { /* must play, cannot: out */
            g->alive[turn] = 0;
            g->n_alive--;
            int nxt = next_alive(g, turn);
            if (g->n_alive == 1) { take(g, nxt, pile_len); return; }
            turn = nxt;
        }
        int8_t card = q->hand[turn][q->head[turn]];
        q->head[turn] = (q->head[turn] + 1) & MASK;
        q->held[turn]--;
        g->pile[pile_len++] = card;
        g->cards++;
        if (card) { owed = card; court = turn; turn = next_alive(g, turn); }
        else if (owed) { if (--owed == 0) { take(g, court, pile_len); return; } }
        else turn = next_alive(g, turn);
    }
}

static int same(const position *a, const position *b, int n_players) {
    if (a->lead != b->lead) return 0;
    for (int p = 0; p < n_players; p++) if (a->held[p] != b->held[p]) return 0;
    for (int p = 0; p < n_players; p++)
        for (int k = 0; k < a->held[p]; k++)
            if (a->hand[p][(a->head[p] + k) & MASK] != b->hand[p][(b->head[p] + k) & MASK]) return 0;
    return 1;
}

static void deal(game *g, const int8_t *cards, const int32_t *sizes, int n_players) {
    memset(g, 0, sizeof *g);
    g->n_players = n_players;
    g->n_alive = n_players;
    g->winner = -1;
    int k = 0, holders = 0, holder = -1;
    for (int p = 0; p < n_players; p++) {
        for (int j = 0; j < sizes[p]; j++) g->pos.hand[p][j] = cards[k++];
        g->pos.held[p] = sizes[p];
        g->alive[p] = 1;
        if (sizes[p]) { holders++; holder = p; }
    }
    g->n_cards = k;
    if (holders == 1) { g->winner = holder; return; }
    while (g->pos.held[g->pos.lead] == 0) { /* seat 0 must lead from an empty hand: out */
        g->alive[g->pos.lead] = 0;
        g->n_alive--;
        g->pos.lead = next_alive(g, g->pos.lead);
    }
}

/* Brent's cycle detection, from trick 1024 on like the engine (almost every game ends
 * before); returns the period in tricks, or 0 when the game ends. */
static long play(game *g) {
    while (g->winner < 0 && g->tricks < 1024) trick(g);
    position saved = g->pos;
    long power = 1, lam = 0;
    while (g->winner < 0) {
        trick(g);
        if (g->winner >= 0) return 0;
        lam++;
        if (same(&g->pos, &saved, g->n_players)) return lam;
        if (lam == power) { saved = g->pos; power *= 2; lam = 0; }
    }
    return 0;
}

/* Threads for play_many (no effect without OpenMP); max_threads says what it will use. */
void set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Games i in [0, n): deal stride `stride` classes from cards + i * stride, split by
 * sizes + i * n_players. Out: outcome, winner, cards, tricks (cycle: at first repeat). */
void play_many(long n, int n_players, const int8_t *cards, long stride, const int32_t *sizes,
               int8_t *outcome, int8_t *winner, int64_t *n_cards_out, int64_t *n_tricks_out) {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        game g, h;
        const int8_t *c = cards + i * stride;
        const int32_t *sz = sizes + i * n_players;
        deal(&g, c, sz, n_players);
        long period = play(&g);
        if (period == 0) {
            outcome[i] = 1; winner[i] = (int8_t)g.winner;
            n_cards_out[i] = g.cards; n_tricks_out[i] = g.tricks;
            continue;
        }
        deal(&g, c, sz, n_players);
        deal(&h, c, sz, n_players);
        for (long t = 0; t < period; t++) trick(&h);
        while (!same(&g.pos, &h.pos, n_players)) { trick(&g); trick(&h); }
        outcome[i] = 2; winner[i] = -1;
        n_cards_out[i] = h.cards; n_tricks_out[i] = h.tricks;
    }
}
