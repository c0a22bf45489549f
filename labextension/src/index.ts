/**
 * The JupyterLab plugin: registers accel (accel.ts) with JupyterLab's editor language
 * registry, under the name, MIME type and file extension of the kernel's language_info
 * (accel_kernel/kernel/kernel.py), so notebook cells of the accel kernel, `.accel` files and
 * the console use it.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';

import { accel } from './accel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'accel-kernel-codemirror:language',
  description: 'accel highlighting, indentation and comments in the editor',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    languages.addLanguage({
      name: 'accel',
      displayName: 'accel',
      mime: 'text/x-accel',
      extensions: ['accel'],
      support: accel()
    });
  }
};

export default plugin;
