// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpi_ring: a small MPI check for the test beds' launcher (make test-pair):
 * each rank passes a buffer of 1 B to 1 MiB around the ring with its
 * contents checked, then an allreduce of the ranks.  Prints one line from
 * rank 0, "mpi_ring: N ranks on H hosts ok", and exits 0 only if all of it
 * held.  Open MPI picks the transport (--mca btl ... or pml cm/mtl ofi).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char fill(int rank, size_t i)
{
	return (unsigned char)(rank * 31 + i * 7 + (i >> 8));
}

int main(int argc, char **argv)
{
	int rank, size, bad = 0, sum = 0, hosts = 0, len;
	char name[MPI_MAX_PROCESSOR_NAME], *all;
	unsigned char *buf;
	size_t n, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = malloc(1 << 20);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (n = 1; n <= 1 << 20; n *= 4) {
		int next = (rank + 1) % size, prev = (rank + size - 1) % size;

		for (i = 0; i < n; i++)
			buf[i] = fill(rank, i);
		MPI_Sendrecv_replace(buf, (int)n, MPI_BYTE, next, (int)n, prev,
				     (int)n, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (i = 0; i < n; i++)
			if (buf[i] != fill(prev, i)) {
				fprintf(stderr, "rank %d: %zu B from %d: byte %zu wrong\n",
					rank, n, prev, i);
				bad = 1;
				break;
			}
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (sum != size * (size - 1) / 2)
		bad = 1;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

	/* How many hosts: rank 0 counts the distinct processor names. */
	MPI_Get_processor_name(name, &len);
	all = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
	if (!all)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		int r, s;

		for (r = 0; r < size; r++) {
			for (s = 0; s < r; s++)
				if (!strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME,
					    all + (size_t)s * MPI_MAX_PROCESSOR_NAME))
					break;
			hosts += s == r;
		}
		printf("mpi_ring: %d ranks on %d hosts %s\n", size, hosts,
		       bad ? "FAILED" : "ok");
	}
	free(all);
	free(buf);
	MPI_Finalize();
	return bad;
}
