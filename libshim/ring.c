// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libshim: the producer side of a submission ring.  Endpoints (ep.c, for
 * sends and receives) and shared receive contexts (srx.c, receives only)
 * each own one; msg.c builds the struct kfab_sqe entries, this file puts
 * them in.  The protocol is uapi/linux/kfab.h's:
 *
 *   1. head = acquire-load(head)        pairs with the kernel's release of
 *                                       head: the slots before it are free
 *   2. tail - head == entries?          full: publish, ring the doorbell
 *                                       once, look again, else -FI_EAGAIN
 *   3. write sqes[tail & mask]
 *   4. release-store(tail, tail + 1)    pairs with the kernel's acquire of
 *                                       tail: it sees the slot written
 *   5. KFAB_IOC_DOORBELL                unless FI_MORE
 *
 * With FI_MORE the entry is written but the tail is not published: the
 * kernel cannot see (nor progress start) any part of a batch until the
 * call without FI_MORE publishes all of it and rings once.  A full ring
 * ends a batch early (FI_MORE is a hint).
 *
 * We never read the tail back: local_tail is ours.  The owner's lock
 * serialises producers; progress takes no lock (two loads and a call).
 */
#include <string.h>
#include <sys/mman.h>

#include "barrier.h"
#include "internal.h"

/* The kernel's answer must describe a ring that fits its region. */
int shim_ring_map(struct shim_ring *ring, int fd, uint32_t id,
		  const struct kfab_sq_layout *l)
{
	uint32_t n = l->entries;
	int ret;

	if (!n || (n & (n - 1)) || l->entry_size < sizeof(struct kfab_sqe) ||
	    l->off_tail % sizeof(uint32_t) || l->off_head % sizeof(uint32_t) ||
	    l->off_entries % sizeof(uint64_t) ||
	    l->off_tail + sizeof(uint32_t) > l->region.size ||
	    l->off_head + sizeof(uint32_t) > l->region.size ||
	    l->off_entries + (uint64_t)n * l->entry_size > l->region.size)
		return -FI_EOTHER;

	ring->fd = fd;
	ring->id = id;
	ring->map_len = l->region.size;
	ret = shim_dev_mmap(fd, l->region.offset, ring->map_len, true,
			    &ring->map);
	if (ret) {
		ring->map = NULL;
		return ret;
	}
	ring->tail = (uint32_t *)((char *)ring->map + l->off_tail);
	ring->head = (const uint32_t *)((char *)ring->map + l->off_head);
	ring->sqes = (uint8_t *)ring->map + l->off_entries;
	ring->entries = n;
	ring->mask = n - 1;
	ring->entry_size = l->entry_size;
	/* A fresh ring: both indices start where the kernel put them. */
	ring->local_tail = shim_load_acquire(ring->head);
	ring->published = ring->local_tail;
	shim_store_release(ring->tail, ring->local_tail);
	return 0;
}

void shim_ring_unmap(struct shim_ring *ring)
{
	if (ring->map)
		munmap(ring->map, ring->map_len);
	ring->map = NULL;
}

uint32_t shim_ring_entries(uint64_t want)
{
	uint32_t n = 1;

	if (!want)
		return 0;	/* the kernel's default */
	if (want >= KFAB_SQ_MAX_ENTRIES)
		return KFAB_SQ_MAX_ENTRIES;
	while (n < want)
		n <<= 1;
	return n;
}

/* Slots in use, as far as we know; never above ring->entries. */
static uint32_t shim_ring_used(struct shim_ring *ring)
{
	/* Pairs with the kernel's smp_store_release() of head. */
	uint32_t used = ring->local_tail - shim_load_acquire(ring->head);

	/* A head past our tail, or too far behind, is not the kernel's. */
	return used > ring->entries ? ring->entries : used;
}

uint32_t shim_ring_space(struct shim_ring *ring)
{
	return ring->entries - shim_ring_used(ring);
}

static void shim_ring_publish(struct shim_ring *ring)
{
	if (ring->published == ring->local_tail)
		return;
	/* Pairs with the kernel's smp_load_acquire() of tail. */
	shim_store_release(ring->tail, ring->local_tail);
	ring->published = ring->local_tail;
}

static void shim_ring_doorbell(struct shim_ring *ring)
{
	int ret = shim_dev_doorbell(ring->fd, ring->id, NULL);

	/*
	 * The requests are in the ring whatever the answer: the next
	 * doorbell (or progress from a CQ read) carries them out.
	 */
	if (ret)
		SHIM_INFO(EP_DATA, "ring of %u: KFAB_IOC_DOORBELL: %s\n",
			  ring->id, fi_strerror(-ret));
}

void shim_ring_flush(struct shim_ring *ring)
{
	shim_ring_publish(ring);
	shim_ring_doorbell(ring);
}

ssize_t shim_ring_post(struct shim_ring *ring, const struct kfab_sqe *sqe,
		       bool more, bool doorbell)
{
	uint8_t *slot;

	if (shim_ring_used(ring) >= ring->entries) {
		shim_ring_publish(ring);
		if (!doorbell)
			return -FI_EAGAIN;
		shim_ring_doorbell(ring);
		if (shim_ring_used(ring) >= ring->entries)
			return -FI_EAGAIN;
	}
	slot = ring->sqes + (size_t)(ring->local_tail & ring->mask) *
	       ring->entry_size;
	memcpy(slot, sqe, sizeof(*sqe));
	/* A kernel entry larger than ours: what we do not know is zero. */
	if (ring->entry_size > sizeof(*sqe))
		memset(slot + sizeof(*sqe), 0, ring->entry_size - sizeof(*sqe));
	ring->local_tail++;
	if (!more) {
		shim_ring_publish(ring);
		if (doorbell)
			shim_ring_doorbell(ring);
	}
	return 0;
}

bool shim_ring_progress(struct shim_ring *ring)
{
	uint32_t tail, head;

	/* The published tail is ours; a scribbled one only costs a call. */
	tail = shim_read_once(ring->tail);
	/* Pairs with the kernel's smp_store_release() of head. */
	head = shim_load_acquire(ring->head);
	if (head == tail)
		return false;
	(void)shim_dev_doorbell(ring->fd, ring->id, NULL);
	return shim_load_acquire(ring->head) != tail;
}
