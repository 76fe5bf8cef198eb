// SPDX-License-Identifier: GPL-2.0
/**
 * DOC: gcov dump of the pin core for coverage builds
 *
 * A KUnit kernel has no user space, so the profile that gcov keeps for
 * mm/gup.c and mm/memremap.c (profiled with GCOV_PROFILE_gup.o=y and
 * GCOV_PROFILE_memremap.o=y on the make command line) cannot be copied out
 * of /sys/kernel/debug/gcov. Instead, once every suite has run, the
 * suite_exit of gup_pin_final converts each profile of a file under mm/ to
 * the .gcda format, as the debugfs files would present it, and prints it
 * on the console in lines of at most 200 characters:
 *
 *   GCOV: <gcda path> <offset> <hex bytes>
 *   GCOV-END: <gcda path> <size> <crc32>
 *
 * The crc32 is that of zlib (crc32_le() seeded and finished with ~0).
 * tools/coverage.py on the host checks the sizes and checksums and writes
 * the .gcda files next to the .gcno files of the build directory.
 *
 * This file is #included by gup_kunit.c, and so compiled as part of
 * mm/gup.c, only with CONFIG_GCOV_KERNEL.
 */

#include <linux/crc32.h>
#include <linux/vmalloc.h>
#include "../kernel/gcov/gcov.h"

/* Longest console line, and most bytes that %*phN prints. */
#define GUP_KUNIT_GCOV_LINE	200
#define GUP_KUNIT_GCOV_CHUNK	64

/* The profiles of files under mm/: only the pin core is profiled there. */
static bool gup_kunit_gcov_wanted(const char *name)
{
	size_t len = strlen(name);

	return strstr(name, "/mm/") && len > 5 &&
	       !strcmp(name + len - 5, ".gcda");
}

static void gup_kunit_gcov_print(const char *name, const char *buf,
				 size_t size)
{
	int room;
	size_t chunk, off;

	/* "GCOV: " name ' ' up to 10 digits ' ', then two hex digits a byte */
	room = GUP_KUNIT_GCOV_LINE - (int)strlen("GCOV: ") -
	       (int)strlen(name) - 12;
	chunk = clamp_t(int, room / 2, 8, GUP_KUNIT_GCOV_CHUNK);

	for (off = 0; off < size; off += chunk) {
		size_t len = min(chunk, size - off);

		pr_info("GCOV: %s %zu %*phN\n", name, off, (int)len, buf + off);
		cond_resched();
	}
	pr_info("GCOV-END: %s %zu %08x\n", name, size,
		crc32_le(~0U, buf, size) ^ ~0U);
}

static void gup_kunit_gcov_dump(struct kunit_suite *suite)
{
	struct gcov_info *info = NULL;
	const char *name;
	size_t size;
	char *buf;

	mutex_lock(&gcov_lock);
	while ((info = gcov_info_next(info))) {
		name = gcov_info_filename(info);
		if (!gup_kunit_gcov_wanted(name))
			continue;
		size = convert_to_gcda(NULL, info);
		buf = vmalloc(size);
		if (!buf) {
			pr_info("GCOV-ERROR: %s no memory for %zu bytes\n",
				name, size);
			continue;
		}
		convert_to_gcda(buf, info);
		gup_kunit_gcov_print(name, buf, size);
		vfree(buf);
	}
	mutex_unlock(&gcov_lock);
}
