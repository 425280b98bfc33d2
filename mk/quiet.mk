# SPDX-License-Identifier: MIT
# mk/quiet.mk (included by the Makefile): quiet by default, one short line per step
# ("  CC      build/obj/core/base/error.o", as kbuild and git print); V=1 prints every command
# in full.
ifeq ($(V),1)
QUIET_CC =
QUIET_LINK =
QUIET_AR =
QUIET_OBJCOPY =
QUIET_GEN =
else
QUIET_CC = @printf '  %-7s %s\n' CC '$@';
QUIET_LINK = @printf '  %-7s %s\n' LINK '$@';
QUIET_AR = @printf '  %-7s %s\n' AR '$@';
QUIET_OBJCOPY = @printf '  %-7s %s\n' OBJCOPY '$@';
QUIET_GEN = @printf '  %-7s %s\n' GEN '$@';
endif
