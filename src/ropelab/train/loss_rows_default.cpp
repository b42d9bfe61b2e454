#define ROPELAB_ROWS_NS baseline
#include "loss_rows.inc"
