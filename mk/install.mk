# SPDX-License-Identifier: MIT
# mk/install.mk (included by the Makefile): install, uninstall.
# Installs the libraries (a CUDA=1 build adds libcubert-fakecuda.so, the fake libcuda
# of docs/cuda.md), the public headers (the user API and the driver interface) and the
# kernel library header (<cubert/cubert_kernels.h>), tools/cubert-info (bindir), cubert.pc
# (pkgconfigdir) and the CMake package (cmakedir: find_package(cubert CONFIG), targets
# cubert::cubert and cubert::cubert_static). cubert.pc and the CMake files are written at
# install time so that the PREFIX/libdir given to `make install` are the ones recorded; the
# CMake files locate the tree relative to themselves (DESTDIR-staged trees work as installed).
# The system libraries a static link needs: Libs.private of cubert.pc, and the CMake
# static target's link interface (-ldl only for the CUDA driver's dlopen).
LIBS_PRIVATE := -lpthread$(if $(filter 1,$(CUDA)), -ldl)
INSTALL_SUBST = -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(libdir)|g' -e 's|@INCLUDEDIR@|$(includedir)|g' \
  -e 's|@VERSION@|$(VERSION)|g' -e 's|@MAJOR@|$(MAJOR)|g' -e 's|@LIBS_PRIVATE@|$(LIBS_PRIVATE)|g'
relpath = $$(realpath -m --relative-to='$(1)' '$(2)')
install: all $(BUILD)/tools/cubert-info
	install -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)/cubert/driver $(DESTDIR)$(pkgconfigdir) \
	  $(DESTDIR)$(bindir) $(DESTDIR)$(cmakedir)
	install -m 644 include/cubert/*.h examples/kernels/cubert_kernels.h $(DESTDIR)$(includedir)/cubert/
	install -m 644 include/cubert/driver/*.h $(DESTDIR)$(includedir)/cubert/driver/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(libdir)/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(libdir)/
	ln -sf libcubert.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libcubert.so
	install -m 755 $(BUILD)/tools/cubert-info $(DESTDIR)$(bindir)/
	$(if $(filter 1,$(CUDA)),install -m 755 $(BUILD)/libcubert-fakecuda.so $(DESTDIR)$(libdir)/)
	sed $(INSTALL_SUBST) cubert.pc.in > $(DESTDIR)$(pkgconfigdir)/cubert.pc
	chmod 644 $(DESTDIR)$(pkgconfigdir)/cubert.pc
	sed $(INSTALL_SUBST) -e "s|@PREFIX_FROM_CMAKEDIR@|$(call relpath,$(cmakedir),$(PREFIX))|" \
	  -e "s|@LIBDIR_FROM_PREFIX@|$(call relpath,$(PREFIX),$(libdir))|" \
	  -e "s|@INCLUDEDIR_FROM_PREFIX@|$(call relpath,$(PREFIX),$(includedir))|" \
	  -e 's|@CMAKE_EXTRA_LIBS@|$(if $(filter 1,$(CUDA)),;$${CMAKE_DL_LIBS})|' \
	  cmake/cubertConfig.cmake.in > $(DESTDIR)$(cmakedir)/cubertConfig.cmake
	sed $(INSTALL_SUBST) -e "s|@SIZEOF_VOID_P@|$$($(CC) $(VARIANT_FLAGS) -dM -E -x c /dev/null | \
	  sed -n 's/^#define __SIZEOF_POINTER__ //p')|" \
	  cmake/cubertConfigVersion.cmake.in > $(DESTDIR)$(cmakedir)/cubertConfigVersion.cmake
	chmod 644 $(DESTDIR)$(cmakedir)/cubertConfig.cmake $(DESTDIR)$(cmakedir)/cubertConfigVersion.cmake

uninstall:
	rm -f $(DESTDIR)$(libdir)/libcubert.a $(DESTDIR)$(libdir)/libcubert.so \
	  $(DESTDIR)$(libdir)/$(SONAME) $(DESTDIR)$(libdir)/libcubert.so.$(VERSION) \
	  $(DESTDIR)$(pkgconfigdir)/cubert.pc $(DESTDIR)$(bindir)/cubert-info \
	  $(DESTDIR)$(libdir)/libcubert-fakecuda.so
	rm -rf $(DESTDIR)$(includedir)/cubert $(DESTDIR)$(cmakedir)

