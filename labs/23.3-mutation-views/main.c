/* main.c: lab 23.3's driver (being written). */
int main(void) { return 3; }
