// The palette of the shared scene (core/protocol.js SCENE_KINDS): simple
// three.js shapes built here, nothing downloaded. Each stands on the marker
// plane (y = 0 at its base), about `size` across.
import { BoxGeometry, ConeGeometry, Group, Mesh, MeshStandardMaterial, SphereGeometry, TorusGeometry } from 'three';

/** Colours of the palette's kinds, by kind index (0 is the car, drawn by scene.js). */
export const KIND_COLOURS = Object.freeze([0xe8452c, 0x3b82f6, 0x22c55e, 0xf59e0b, 0xa855f7]);

/**
 * One object of the palette.
 * @param {number} kind 1 cube, 2 sphere, 3 cone, 4 torus
 * @param {number} size metres across
 * @returns {Group}
 */
export function makeShape(kind, size) {
  const material = new MeshStandardMaterial({ color: KIND_COLOURS[kind] ?? 0xffffff, roughness: 0.5, metalness: 0.1 });
  const r = size / 2;
  const geometry = kind === 1 ? new BoxGeometry(size, size, size)
    : kind === 2 ? new SphereGeometry(r, 24, 16)
      : kind === 3 ? new ConeGeometry(r, size * 1.2, 24)
        : new TorusGeometry(r * 0.7, r * 0.3, 12, 32);
  const mesh = new Mesh(geometry, material);
  // stand on the plane: a torus lies flat on it
  if (kind === 4) { mesh.rotation.x = -Math.PI / 2; mesh.position.y = r * 0.3; } else mesh.position.y = kind === 3 ? size * 0.6 : r;
  const group = new Group();
  group.add(mesh);
  group.userData.kind = kind;
  return group;
}
