// Hadoop's local file system, minus a process per file. Without Hadoop's native library (pip's
// pyspark has none), RawLocalFileSystem runs chmod to set the permissions of every file and
// folder it creates, and ls -ld to read them (the Hive metastore reads them for every table and
// partition): a local sync of 1,000 tables started over 11,000 processes. This does both through
// java.nio instead. Compiled by Janino (see jvm_code.py): Java 7 syntax.
package segmentlake;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {
    public LocalFileSystem() {
        super(new Raw());
    }

    public static class Raw extends RawLocalFileSystem {
        public void setPermission(Path path, FsPermission permission) throws IOException {
            // rwxrwxrwx, from the highest bit down, in the order of PosixFilePermission
            PosixFilePermission[] all = PosixFilePermission.values();
            short mode = permission.toShort();
            Set permissions = new HashSet();
            for (int i = 0; i < 9; i++) if ((mode & (1 << (8 - i))) != 0) permissions.add(all[i]);
            Files.setPosixFilePermissions(pathToFile(path).toPath(), permissions);
        }

        public FileStatus getFileStatus(Path path) throws IOException {
            return withPermissions(super.getFileStatus(path));
        }

        public FileStatus[] listStatus(Path path) throws IOException {
            FileStatus[] statuses = super.listStatus(path);
            for (int i = 0; i < statuses.length; i++) statuses[i] = withPermissions(statuses[i]);
            return statuses;
        }

        /** ``status`` with its permissions, owner and group read now, so that nothing forks ls later. */
        FileStatus withPermissions(FileStatus status) throws IOException {
            PosixFileAttributes attributes = (PosixFileAttributes) Files.readAttributes(
                pathToFile(status.getPath()).toPath(), PosixFileAttributes.class, new java.nio.file.LinkOption[0]);
            int mode = 0;
            for (Iterator granted = attributes.permissions().iterator(); granted.hasNext();) {
                mode |= 1 << (8 - ((PosixFilePermission) granted.next()).ordinal());
            }
            return new FileStatus(status.getLen(), status.isDirectory(), status.getReplication(), status.getBlockSize(),
                status.getModificationTime(), status.getAccessTime(), new FsPermission((short) mode),
                attributes.owner().getName(), attributes.group().getName(), status.getPath());
        }
    }
}
