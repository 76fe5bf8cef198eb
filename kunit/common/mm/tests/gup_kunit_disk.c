// SPDX-License-Identifier: GPL-2.0
/*
 * The GUP pin KUnit suites' test library: files on a real ext4, the
 * virtio disk that the documented run attaches, and reads of its blocks
 * past every cache.
 */

#include <linux/blkdev.h>
#include <linux/buffer_head.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs_context.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include "gup_kunit.h"

/* ------------------------------------------------------------------ */
/* A file on a real ext4                                               */
/* ------------------------------------------------------------------ */

/*
 * The virtio disk that the QEMU configuration attaches: an ext4 made on
 * the host, opened with snapshot=on, so that every boot starts from the
 * same empty filesystem. KUnit runs before prepare_namespace(), with no
 * devtmpfs mounted: the mount goes through a device node on rootfs, made
 * for it and removed right after.
 */
#define GUP_KUNIT_DISK		"vda"
#define GUP_KUNIT_DISK_NODE	"/gup_kunit_vda"

static int gup_kunit_disk_node(dev_t devt)
{
	struct dentry *dentry;
	struct path path;
	int err;

	dentry = kern_path_create(AT_FDCWD, GUP_KUNIT_DISK_NODE, &path, 0);
	if (IS_ERR(dentry))
		return PTR_ERR(dentry);
	err = vfs_mknod(gup_kunit_idmap(path.mnt), d_inode(path.dentry), dentry,
			S_IFBLK | 0600, devt);
	done_path_create(&path, dentry);
	return err;
}

static void gup_kunit_disk_node_remove(void)
{
	struct dentry *dentry;
	struct path parent;

	dentry = kern_path_locked(GUP_KUNIT_DISK_NODE, &parent);
	if (IS_ERR(dentry))
		return;
	if (d_really_is_positive(dentry))
		vfs_unlink(gup_kunit_idmap(parent.mnt), d_inode(parent.dentry),
			   dentry, NULL);
	inode_unlock(d_inode(parent.dentry));
	dput(dentry);
	path_put(&parent);
}

static struct vfsmount *gup_kunit_mount_ext4(struct file_system_type *type,
					     dev_t devt)
{
	struct fs_context *fc;
	struct vfsmount *mnt;
	int err;

	fc = fs_context_for_mount(type, SB_KERNMOUNT);
	if (IS_ERR(fc))
		return ERR_CAST(fc);
	err = gup_kunit_disk_node(devt);
	if (!err)
		err = vfs_parse_fs_string(fc, "source", GUP_KUNIT_DISK_NODE,
					  strlen(GUP_KUNIT_DISK_NODE));
	mnt = err ? ERR_PTR(err) : fc_mount(fc);
	gup_kunit_disk_node_remove();
	put_fs_context(fc);
	return mnt;
}

static void gup_kunit_mnt_release(struct kunit_resource *res)
{
	mntput(res->data);
}

/* The ext4 of the virtio disk, mounted for the case; skip without one. */
static struct vfsmount *gup_kunit_ext4(struct kunit *test)
{
	struct file_system_type *type;
	struct vfsmount *mnt;
	struct device *disk;
	dev_t devt;

	disk = class_find_device_by_name(&block_class, GUP_KUNIT_DISK);
	if (!disk)
		kunit_skip(test, GUP_KUNIT_NEEDS_DISK);
	devt = disk->devt;
	put_device(disk);
	type = get_fs_type("ext4");
	if (!type)
		kunit_skip(test, "needs CONFIG_EXT4_FS");
	mnt = gup_kunit_mount_ext4(type, devt);
	put_filesystem(type);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(mnt),
			       "%s does not mount as ext4 (%ld): not the clean ext4 image of tools/mkdisk.py",
			       GUP_KUNIT_DISK, PTR_ERR(mnt));
	if (!kunit_alloc_resource(test, NULL, gup_kunit_mnt_release,
				  GFP_KERNEL, mnt)) {
		mntput(mnt);
		KUNIT_FAIL(test, "no memory for a resource");
	}
	return mnt;
}

/*
 * Close the case's file: first wait for its mappings to go. A case that
 * ends early leaves its mapping to the exit of its thread, which may still
 * be under way, and a vma's fput() from a kthread is deferred; an open
 * file at the unmount would be a busy inode.
 */
static void gup_kunit_file_release(struct kunit_resource *res)
{
	unsigned long timeout = jiffies + 10 * HZ;
	struct file *file = res->data;

	while (file_count(file) > 1 && time_before(jiffies, timeout)) {
		flush_delayed_fput();
		usleep_range(1000, 2000);
	}
	__fput_sync(file);
}

/**
 * gup_kunit_ext4_file() - a new file on a real ext4, written to the disk.
 * @test: the case; skipped if the kernel has no disk or no ext4.
 * @npages: the file's size in pages, each filled with 'A'.
 * @blocks: NULL, or @npages entries: the disk block of each page.
 *
 * The file, named after the case, is written and fsync()ed, so that its
 * blocks are allocated and on the disk before the case maps it. It is
 * closed, and the filesystem unmounted, when the case ends.
 *
 * Return: the file, open read-write.
 */
struct file *gup_kunit_ext4_file(struct kunit *test, long npages,
				 sector_t *blocks)
{
	struct vfsmount *mnt = gup_kunit_ext4(test);
	struct file *file;
	loff_t pos = 0;
	sector_t blk;
	long i;
	char *buf;

	file = file_open_root_mnt(mnt, test->name,
				  O_RDWR | O_CREAT | O_TRUNC | O_LARGEFILE,
				  0600);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(file), "open %s: %ld", test->name,
			       PTR_ERR(file));
	if (!kunit_alloc_resource(test, NULL, gup_kunit_file_release,
				  GFP_KERNEL, file)) {
		__fput_sync(file);
		KUNIT_FAIL(test, "no memory for a resource");
	}
	buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memset(buf, 'A', PAGE_SIZE);
	for (i = 0; i < npages; i++)
		KUNIT_ASSERT_EQ(test, kernel_write(file, buf, PAGE_SIZE, &pos),
				(ssize_t)PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, vfs_fsync(file, 0), 0);
	for (i = 0; blocks && i < npages; i++) {
		blk = i;
		KUNIT_ASSERT_EQ(test, bmap(file_inode(file), &blk), 0);
		KUNIT_ASSERT_NE_MSG(test, blk, (sector_t)0, "page %ld: a hole", i);
		blocks[i] = blk;
	}
	return file;
}

/* The disk's request limit before gup_kunit_ext4_page_requests(). */
struct gup_kunit_sectors {
	struct request_queue *q;
	unsigned int old;
};

static void gup_kunit_sectors_restore(struct kunit_resource *res)
{
	struct gup_kunit_sectors *s = res->data;
	unsigned int ignored;

	gup_kunit_max_sectors(s->q, s->old, &ignored);
	kfree(s);
}

/**
 * gup_kunit_ext4_page_requests() - one page per request on the ext4 disk.
 * @test: the case, whose end restores the disk's limit.
 * @file: a file on the disk (gup_kunit_ext4_file()).
 *
 * As `echo 4 > /sys/block/vda/queue/max_sectors_kb` does (for 4 KiB
 * pages): a read of several pages becomes one request per page, of one
 * segment. The allocations of the virtio-blk driver for a request (a
 * scatterlist chain beyond two segments, its indirect descriptors) then
 * depend on how many pages are read, and not on where in memory the page
 * cache's folios happen to lie, which differs from boot to boot: a fault
 * sweep needs the n-th allocation of a read to be the same each time.
 */
void gup_kunit_ext4_page_requests(struct kunit *test, struct file *file)
{
	struct block_device *bdev = file_inode(file)->i_sb->s_bdev;
	struct gup_kunit_sectors *s = kmalloc(sizeof(*s), GFP_KERNEL);
	int err;

	KUNIT_ASSERT_NOT_NULL(test, s);
	s->q = bdev_get_queue(bdev);
	err = gup_kunit_max_sectors(s->q, PAGE_SIZE >> SECTOR_SHIFT, &s->old);
	if (err)
		kfree(s);
	KUNIT_ASSERT_EQ_MSG(test, err, 0, "max_sectors_kb of %s", GUP_KUNIT_DISK);
	if (!kunit_alloc_resource(test, NULL, gup_kunit_sectors_restore,
				  GFP_KERNEL, s)) {
		gup_kunit_max_sectors(s->q, s->old, &s->old);
		kfree(s);
		KUNIT_FAIL(test, "no memory for a resource");
	}
}

/*
 * The byte that fills bytes [@off, @off + @len) of block @blk of @file's
 * disk, as the disk holds them now, or -1 if they differ. The block is
 * read from the device past every cache: past the file's page cache,
 * which may hold other data, and past the block device's own.
 */
int gup_kunit_disk_byte(struct kunit *test, struct file *file, sector_t blk,
			size_t off, size_t len)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct buffer_head *bh = sb_getblk(sb, blk);
	int byte;

	KUNIT_ASSERT_NOT_NULL(test, bh);
	lock_buffer(bh);
	clear_buffer_uptodate(bh);
	unlock_buffer(bh);
	brelse(bh);
	bh = sb_bread(sb, blk);
	KUNIT_ASSERT_NOT_NULL_MSG(test, bh, "cannot read block %llu",
				  (unsigned long long)blk);
	byte = (u8)bh->b_data[off];
	if (memchr_inv(bh->b_data + off, byte, len))
		byte = -1;
	brelse(bh);
	return byte;
}

/*
 * Page @index of @file, read back from the disk: the file's page cache is
 * evicted first (every page must be clean, unmapped and unpinned by now),
 * so that the read is what a reader after a reboot would see. Return the
 * byte that fills the page, or -1 if its bytes differ.
 */
int gup_kunit_file_byte_from_disk(struct kunit *test, struct file *file,
				  long index)
{
	struct address_space *mapping = file->f_mapping;
	loff_t pos = (loff_t)index * PAGE_SIZE;
	char *buf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	int byte;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	lru_add_drain_all();
	invalidate_mapping_pages(mapping, 0, -1);
	KUNIT_EXPECT_EQ_MSG(test, mapping->nrpages, 0UL,
			    "a page of the file stays in the page cache");
	KUNIT_ASSERT_EQ(test, kernel_read(file, buf, PAGE_SIZE, &pos),
			(ssize_t)PAGE_SIZE);
	byte = (u8)buf[0];
	if (memchr_inv(buf, byte, PAGE_SIZE))
		byte = -1;
	kunit_kfree(test, buf);
	return byte;
}
