// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit checks of what the GUP pin suites leave behind
 * (CONFIG_GUP_KUNIT_TEST).
 *
 * gup_pin_final: runs after every other gup_pin* suite (this object links
 * last in mm/Makefile, and built-in suites run in link order): no pin,
 * folio or pgmap left behind, and, with CONFIG_DEBUG_KMEMLEAK, no kernel
 * object that nothing references any more.
 */

#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/uaccess.h>
#include "gup_kunit.h"

/*
 * The suites must leave no pin behind: every pin acquired since boot has
 * been released (nothing else pins memory before user space starts).
 */
static void suites_leave_no_pins_behind(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, gup_kunit_node_stat(NR_FOLL_PIN_ACQUIRED),
			gup_kunit_node_stat(NR_FOLL_PIN_RELEASED));
}

/* ... and no folio or pgmap that they allocated. */
static void suites_free_every_folio_they_allocate(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, atomic_read(&gup_kunit_alive), 0);
}

#ifdef CONFIG_DEBUG_KMEMLEAK
/*
 * kmemleak's debugfs file, opened from a private debugfs mount: built-in
 * KUnit runs before user space, so nothing has mounted debugfs yet.
 */
static struct file *gup_kunit_kmemleak_open(void)
{
	struct file_system_type *fs = get_fs_type("debugfs");
	struct vfsmount *mnt;
	struct file *f;

	if (!fs)
		return ERR_PTR(-ENODEV);
	mnt = vfs_kern_mount(fs, 0, "debugfs", NULL);
	put_filesystem(fs);
	if (IS_ERR(mnt))
		return ERR_CAST(mnt);
	f = file_open_root_mnt(mnt, "kmemleak", O_RDWR, 0);
	mntput(mnt);		/* the open file holds the mount */
	return f;
}

/*
 * kmemleak (make test-debug): once every other suite has run, a scan finds
 * no unreferenced object. kmemleak's file has ->read and ->write only,
 * which kernel_read()/kernel_write() refuse, so the case borrows a user
 * address space (as gup_pin_user does) to pass them a user buffer. Objects
 * younger than kmemleak's minimum age (5 s) are never reported, so the
 * scan waits that long first: a wait, not a timing assertion. Each object
 * reported is printed to the console; kmemleak's own "N new suspected
 * memory leaks" line fails this case in the splat accounting too.
 */
static void suites_leak_no_kernel_memory(struct kunit *test)
{
	const size_t len = PAGE_SIZE;
	int leaks = 0, chunks = 0;
	unsigned long ubuf;
	struct file *f;
	loff_t pos = 0;
	ssize_t n;
	char *buf;

	buf = kunit_kzalloc(test, len + 1, GFP_KERNEL);
	f = gup_kunit_kmemleak_open();
	ubuf = gup_kunit_vm_mmap(test, NULL, len, GUP_KUNIT_RW, GUP_KUNIT_ANON);
	if (!buf || IS_ERR(f) || IS_ERR_VALUE(ubuf)) {
		KUNIT_FAIL(test, "cannot set up: buf %p, file %ld, mmap %ld",
			   buf, PTR_ERR_OR_ZERO(f), (long)ubuf);
		goto out;
	}
	ssleep(DIV_ROUND_UP(5000, MSEC_PER_SEC) + 1);
	KUNIT_EXPECT_EQ(test, copy_to_user((void __user *)ubuf, "scan", 4),
			0UL);
	n = f->f_op->write(f, (const char __user *)ubuf, 4, &pos);
	KUNIT_EXPECT_EQ(test, n, 4L);
	pos = 0;
	while (chunks++ < 256 &&
	       (n = f->f_op->read(f, (char __user *)ubuf, len, &pos)) > 0) {
		char *line, *cur = buf;

		if (copy_from_user(buf, (void __user *)ubuf, n))
			break;
		buf[n] = '\0';
		while ((line = strsep(&cur, "\n"))) {
			if (!*line)
				continue;
			leaks += !!strstr(line, "unreferenced object");
			kunit_info(test, "kmemleak: %s\n", line);
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, leaks, 0, "unreferenced objects");
out:
	if (!IS_ERR_OR_NULL(f))
		fput(f);
}
#endif /* CONFIG_DEBUG_KMEMLEAK */

static struct kunit_case gup_pin_final_cases[] = {
	KUNIT_CASE(suites_leave_no_pins_behind),
	KUNIT_CASE(suites_free_every_folio_they_allocate),
#ifdef CONFIG_DEBUG_KMEMLEAK
	KUNIT_CASE(suites_leak_no_kernel_memory),
#endif
	{}
};

static struct kunit_suite gup_pin_final_suite = {
	.name = "gup_pin_final",
	.init = gup_kunit_case_init,
	.test_cases = gup_pin_final_cases,
};

kunit_test_suite(gup_pin_final_suite);
