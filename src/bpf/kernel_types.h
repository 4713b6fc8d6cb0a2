/* SPDX-License-Identifier: MIT */
/*
 * The few kernel types the recording program reads, declared with
 * preserve_access_index so that libbpf relocates every field access against
 * the running kernel's BTF (CO-RE): only the fields used are declared, and
 * their offsets here do not matter. No vmlinux.h is needed to build.
 */
#ifndef USTACK_BPF_KERNEL_TYPES_H
#define USTACK_BPF_KERNEL_TYPES_H

#define __core __attribute__((preserve_access_index))

struct super_block {
	unsigned int s_dev;
} __core;

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __core;

struct file {
	struct inode *f_inode;
} __core;

typedef struct {
	void *vdso;
} __core mm_context_t;

typedef struct seqcount {
	unsigned int sequence;
} __core seqcount_t;

/* mm_lock_seq: odd while the mmap lock is held for writing, bumped on every
 * write unlock (CONFIG_PER_VMA_LOCK, Linux 6.13+); absent elsewhere */
struct mm_struct {
	mm_context_t context;
	seqcount_t mm_lock_seq;
} __core;

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_pgoff;
	unsigned long vm_flags;
	struct file *vm_file;
} __core;

typedef struct {
	int counter;
} __core atomic_t;

struct signal_struct {
	atomic_t live; /* threads not yet exiting; 0 at the last one's exit */
} __core;

/* Pending uretprobes (CONFIG_UPROBES): each one's function returns to the
 * trampoline at the start of the mm's xol area; the kernel keeps the real
 * return address in the task's return_instances, newest first, each with
 * the address of the stack slot it replaced (stack) */
struct return_instance {
	unsigned long stack;
	unsigned long orig_ret_vaddr;
	struct return_instance *next;
} __core;

struct uprobe_task {
	struct return_instance *return_instances;
} __core;

struct xol_area {
	unsigned long vaddr;
} __core;

struct uprobes_state {
	struct xol_area *xol_area;
} __core;

struct mm_struct___uprobes {
	struct uprobes_state uprobes_state;
} __core;

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	struct mm_struct *mm;
	struct signal_struct *signal;
	struct uprobe_task *utask;
} __core;

#define VM_EXEC 0x00000004UL
#define PF_KTHREAD 0x00200000 /* task_struct.flags */
#define TASK_DEAD 0x00000080  /* a state: the thread's last switch-out */

#endif
