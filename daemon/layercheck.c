/*
 * The entry of the layer checks (daemon/meson.build): each is a program
 * that links one layer whole with only the layers below it, so that a
 * call into a higher layer is an "undefined reference" at build time.
 * It is never run or installed. A program rather than a shared module:
 * a shared object would need every static library it links (protobuf-c,
 * inih, ...) built position independent, which the image's static build
 * does not have.
 *
 * Process: none (built, never run).
 */
int main(void)
{
	return 0;
}
