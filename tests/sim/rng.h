/*
 * tests/sim/rng.h - the simulator's one source of chance: splitmix64.
 *
 * Every choice of a run (which step, which mount, which entry) comes from
 * one struct sim_rng seeded with the run's seed, so a seed replays exactly.
 * Never rand(): its state is shared and its sequence differs across libcs.
 * Pure, inline; one thread (the simulator has only one).
 */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct sim_rng {
	uint64_t s;
};

/* sim_rng_next() - the next 64 random bits (splitmix64, Steele et al.). */
static inline uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* sim_rng_below() - uniform in [0, @n); 0 if @n is 0. */
static inline uint32_t sim_rng_below(struct sim_rng *r, uint32_t n)
{
	return n ? (uint32_t)(((sim_rng_next(r) >> 32) * (uint64_t)n) >> 32) : 0;
}

/* sim_rng_chance() - true with probability @num/@den. */
static inline bool sim_rng_chance(struct sim_rng *r, uint32_t num, uint32_t den)
{
	return sim_rng_below(r, den) < num;
}

#endif
