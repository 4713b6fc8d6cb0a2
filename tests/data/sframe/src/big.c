/* Fixture: a function larger than 64 KiB whose epilogue lies past offset
 * 0xffff, so its FRE start offsets need 4 bytes. The filler is 70000 bytes
 * of nops, the same with every compiler. */
extern int ext(int);

int big(int a)
{
	int x = ext(a), y = ext(a + 1), z = ext(a + 2);

	__asm__ volatile(".skip 70000, 0x90");
	return ext(x + y + z) + x + y + z;
}
